import sys
from pathlib import Path

from .agent import main

main(Path(sys.argv[1] if len(sys.argv) > 1 else "out"))
