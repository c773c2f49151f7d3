"""``python -m onegraph``: the command line, as the ``onegraph`` script."""

from onegraph.cli import main

main()
