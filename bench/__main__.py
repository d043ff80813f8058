import sys

from bench.relay_bench import main

sys.exit(main())
