"""Weave kernel: one folder per concept, imports pointing down this list (lint-imports).

``checks`` (``weave check``) → ``runtime`` (instances advancing) → ``dispatch`` (tasks and
workers) → ``engine`` (one per process) and ``planning`` (the pure decision core) →
``definitions`` → ``access`` (identity, audit) and ``plugins`` (the node spec and host) →
``storage`` (database, schema, lock order) → ``observability`` → ``foundation`` (errors,
exact JSON, limits). The modules beside the folders (``errors``, ``exactjson``,
``nodespec``, ``expressions``, ``plan``, ``program``, ``db``, ``schema``, ``migrate``,
``identity``) only re-export, as the stable public paths. See docs/architecture.md.
"""
