"""``python -m memtray.core.cli``: what the ``memtray`` console script runs."""

from memtray.core.cli.main import main

raise SystemExit(main())
