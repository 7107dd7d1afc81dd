"""``python -m staticconsumer.settings``: print the docs table, rewrite it, or check this environment.

A module of its own because the package is already imported (by ``staticconsumer``) when ``-m`` runs it;
running the package's own code as ``__main__`` would execute it twice and make runpy warn.
"""

from staticconsumer.settings._doc import main

raise SystemExit(main())
