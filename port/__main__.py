"""``python -m crossgrad.port``: the ``crossgrad-port`` command (`crossgrad.port.main`)."""

from crossgrad.port import main

if __name__ == "__main__":
  main.run()
