from podium.cli import main

raise SystemExit(main())
