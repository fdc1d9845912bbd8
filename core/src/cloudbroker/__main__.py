from cloudbroker.cli import main

main()
