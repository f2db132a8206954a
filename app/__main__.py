import sys

from refscope.app.cli import main

sys.exit(main())
