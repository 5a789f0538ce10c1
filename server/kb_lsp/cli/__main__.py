"""`python -m kb_lsp.cli`: the `kb` command."""

from kb_lsp.cli import main

raise SystemExit(main())
