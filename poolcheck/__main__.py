from poolcheck.cli import main

main()
