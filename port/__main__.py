"""crossgrad-port SRC.py [SRC.py ...] --out_dir=DIR [--report=R.json] [--samples=FILE.py]

Ports the custom-gradient definitions in the source files (it imports them) to
DIR/<stem>_xp.py and proves each against its original (docs/porting.md). Exit status 0
when every definition was ported or refused, 1 when an original's backward is wrong, 2
for bad usage. (`crossgrad.port.main` is the command.)
"""

from crossgrad.port import main

if __name__ == "__main__":
  main.run()
