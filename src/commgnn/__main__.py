import sys

from commgnn.cli import main

sys.exit(main())
