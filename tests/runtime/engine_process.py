"""One engine process for process-level tests: runs the tick loop until killed.

Usage: ``python -m tests.runtime.engine_process URL NODE_ID INTERVAL_S``. Prints ``ready``
once the loop runs. Nothing else: the process holds no state besides its engine.
"""

from __future__ import annotations

import signal
import sys
import threading

from weave_core.engine import Engine
from weave_core.runtime import TickLoop


def main() -> None:
    url, node_id, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
    engine = Engine.open(url, node_id=node_id)
    loop = TickLoop(engine, interval_s=interval)
    loop.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    loop.stop()
    engine.close()


if __name__ == "__main__":
    main()
