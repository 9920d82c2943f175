"""``python -m crossgrad``: crossgrad's commands; ``--version`` prints its version."""

from crossgrad.cli import usage

COMMANDS = """\
python -m crossgrad.check        cross-check the registered ops (console script: crossgrad-check)
python -m crossgrad.tf1.scan     find TF1 gradient overrides in a code base (crossgrad-scan)
python -m crossgrad.tf1.upgrade  rewrite them for crossgrad (crossgrad-upgrade)
python -m crossgrad.tf1.port_check  check a ported op against its TF1 original \
(crossgrad-port-check)"""


def main(argv: list[str]) -> int:
  del argv  # No positional arguments.
  print(COMMANDS)
  return 0


if __name__ == "__main__":
  usage.run(main)
