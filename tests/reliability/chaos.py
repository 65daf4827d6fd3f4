"""Workers that misbehave, for the soak: they speak the worker protocol over HTTP and, task
by task, crash (drop what they hold), stall within their lease (heartbeating), report
twice, or come back after their lease expired; otherwise they report with ``claim_next``.
A transport error (their engine was killed) is retried with the same request.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import httpx

from tests.reliability.cluster import Tenant

BEHAVIOURS = ("normal", "crash", "stall", "duplicate", "late")
WEIGHTS = (70, 6, 8, 10, 6)
LEASE_S = 2  # the soak's tasks' heartbeat timeout (their lease)


class ChaosWorker(threading.Thread):
    """One misbehaving worker bound to one engine URL (restarted on the same port)."""

    def __init__(self, tenant: Tenant, base_url: str, seed: int, stop: threading.Event,
                 handlers: dict[str, Any]) -> None:
        super().__init__(daemon=True, name=f"chaos-{seed}")
        self.tenant, self.base_url, self.stop = tenant, base_url, stop
        self.rng = random.Random(seed)
        self.handlers = handlers
        self.seen: Counter[str] = Counter()
        self.worker_id = f"chaos-{seed}-0"
        self.failure: BaseException | None = None

    def _post(self, http: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
        while True:
            try:
                return http.post(f"/v1/namespaces/{self.tenant.namespace}{path}", json=body)
            except httpx.TransportError:
                if self.stop.is_set():
                    raise
                time.sleep(0.2)

    def _claim_body(self, max_tasks: int) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "max_tasks": max_tasks,
                "handlers": [{"name": h, "version": "1"} for h in self.handlers]}

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base_url, timeout=40, headers={
                    "authorization": f"Bearer {self.tenant.token}"}) as http:
                self._loop(http)
        except BaseException as exc:  # surfaced by the soak
            if not self.stop.is_set():
                self.failure = exc

    def _loop(self, http: httpx.Client) -> None:
        held: list[dict[str, Any]] = []
        while not self.stop.is_set():
            if not held:
                answer = self._post(http, "/queues/q/claim",
                                    {**self._claim_body(2), "wait_seconds": 1})
                if answer.status_code == 200:
                    held = list(answer.json()["tasks"])
                continue
            task = held.pop(0)
            behaviour = self.rng.choices(BEHAVIOURS, WEIGHTS)[0]
            self.seen[behaviour] += 1
            if behaviour == "crash":  # everything held is lost; a new process comes up
                held = []
                self.worker_id = f"{self.worker_id.rsplit('-', 1)[0]}-{self.seen['crash']}"
                continue
            output = self.handlers[task["handler"]](task["input"], self.rng)
            body = {"attempt_id": task["attempt_id"], "outcome": "succeeded",
                    "output": output, "claim_next": self._claim_body(1)}
            if behaviour == "stall":  # slow, but heartbeating within its lease
                for _ in range(3):
                    time.sleep(LEASE_S / 3)
                    self._post(http, f"/tasks/{task['task_id']}/heartbeat",
                               {"attempt_id": task["attempt_id"]})
            if behaviour == "late":  # back after its lease expired: refused, audited
                time.sleep(LEASE_S + 1.5)
            path = f"/tasks/{task['task_id']}/complete"
            answer = self._post(http, path, body)
            if behaviour == "duplicate":
                again = self._post(http, path, body)
                assert again.status_code in (200, 409), again.text
                if again.status_code == 200:  # a replay: what it claimed is ours too
                    held += again.json().get("next_tasks", [])
            if answer.status_code == 200:
                held += answer.json().get("next_tasks", [])
            else:
                assert answer.status_code in (404, 409), answer.text


__all__ = ["BEHAVIOURS", "LEASE_S", "ChaosWorker"]
