"""``python -m crossgrad.check``: the cross-check binary, `crossgrad.checker.main`."""

from crossgrad.checker.main import run

if __name__ == "__main__":
  run()
