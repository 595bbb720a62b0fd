import sys

from tui_rater.cli import main

sys.exit(main())
