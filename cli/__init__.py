"""What every crossgrad binary shares on the command line: `usage` (absl's `app.run` with
exit status 2 for bad usage, 0 for ``--help`` and ``--version``), `flag_help` (``--help``
lists a binary's own flags) and `quiet` (the frameworks' start-up noise kept out)."""
