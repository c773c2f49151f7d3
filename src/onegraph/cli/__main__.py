from onegraph.cli import main

main()
