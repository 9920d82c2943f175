"""Starts N local processes and watches them until all succeed or one fails.

Framework-free: the processes are any commands (`frameworks` joins each to its
JAX, TensorFlow or PyTorch group). `run` returns every process's stdout when all exit 0.
If one dies (non-zero exit or a signal), goes silent for ``idle_timeout`` seconds (hung),
or the whole run passes ``timeout``, every process is killed with its process group and
`LaunchError` names the process and the cause, with the end of its stderr. So a caller
never hangs and no process outlives the run. Workers that must listen on a port call
`claim_port` first: a port taken by someone else is then a clear error, not a hang.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Sequence

from crossgrad.registry.errors import CrossgradError

HOST = "127.0.0.1"
POLL_SECONDS = 0.1


class LaunchError(CrossgradError):
  """A process of a local multi-process run failed; the message names it and the cause."""


# Set by `run` for its processes: a folder where `exit_worker` meets a worker's peers.
MEETING_ENV = "CROSSGRAD_LAUNCH_MEETING"


def exit_worker(status: int, *, group: str | None = None, rank: int = 0, size: int = 1,
                wait_s: float = 120.0) -> None:
  """Ends this process with ``status`` at once, its output flushed, skipping the
  interpreter's teardown. For a launched worker whose result is written: torch's gloo
  threads may still be releasing a finished collective's tensors then, and one that needs
  the GIL while the interpreter finalizes aborts the process ("terminate called without
  an active exception", SIGABRT), failing a run that succeeded.

  With ``group``, process ``rank`` of ``size`` first waits (up to ``wait_s``) until every
  process of its group, launched by one `run`, has finished too: one that exits at once
  can close the socket a peer's last TensorFlow collective still uses ("Collective ops is
  aborted by: Socket closed", seen under load). Outside `run` it waits for nobody."""
  sys.stdout.flush()
  sys.stderr.flush()
  meeting = os.environ.get(MEETING_ENV)
  if group is not None and meeting:
    _meet(os.path.join(meeting, group), rank, size, wait_s)
  os._exit(status)  # pylint: disable=protected-access


def _meet(prefix: str, rank: int, size: int, wait_s: float) -> None:
  """Marks ``rank`` as arrived (``prefix.rank``) and waits until all ``size`` have."""
  with open(f"{prefix}.{rank}", "w", encoding="utf-8"):
    pass
  deadline = time.monotonic() + wait_s
  while (not all(os.path.exists(f"{prefix}.{i}") for i in range(size))
         and time.monotonic() < deadline):
    time.sleep(0.05)


def free_ports(count: int) -> list[int]:
  """``count`` distinct ports free on `HOST` now (the OS picks them)."""
  sockets = [socket.socket() for _ in range(count)]
  try:
    for s in sockets:
      s.bind((HOST, 0))
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def claim_port(port: int, process: str) -> None:
  """Raises `LaunchError` if ``port`` on `HOST` is taken (a worker calls this before it
  listens there, so a taken port fails at once instead of hanging its peers)."""
  with socket.socket() as s:
    try:
      s.bind((HOST, port))
    except OSError as e:
      raise LaunchError(f"port {port} is taken ({e.strerror})", argument=process,
                        hint="Let the launcher pick free ports.") from None


@dataclasses.dataclass
class _Process:
  """One started process, with its output collected by reader threads."""
  name: str
  popen: subprocess.Popen
  stdout: list[str] = dataclasses.field(default_factory=list)
  stderr: list[str] = dataclasses.field(default_factory=list)
  last_output: float = dataclasses.field(default_factory=time.monotonic)
  readers: list[threading.Thread] = dataclasses.field(default_factory=list)
  on_stdout: Callable[[str], None] | None = None

  def read(self, stream, lines: list[str]) -> None:
    for line in stream:
      lines.append(line)
      self.last_output = time.monotonic()
      if self.on_stdout and lines is self.stdout:
        self.on_stdout(line)

  def tail(self, lines: int = 12) -> str:
    text = "".join(self.stderr[-lines:]).strip()
    return text if text else "(no stderr)"


def _exit_cause(code: int) -> str:
  if code < 0:
    return f"killed by signal {-code} ({signal.Signals(-code).name})"
  return f"exited with status {code}"


def _start(name: str, command: Sequence[str], env, on_stdout) -> _Process:
  popen = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, start_new_session=True)
  process = _Process(name, popen, on_stdout=on_stdout)
  for stream, lines in ((popen.stdout, process.stdout), (popen.stderr, process.stderr)):
    process.readers.append(threading.Thread(target=process.read, args=(stream, lines),
                                            daemon=True))
    process.readers[-1].start()
  return process


def _kill(processes: list[_Process]) -> None:
  """SIGKILL each process's group (its children too), then reaps it."""
  for p in processes:
    if p.popen.poll() is None:
      try:
        os.killpg(p.popen.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
  for p in processes:
    p.popen.wait()


def _failure(processes: list[_Process], start: float, timeout: float,
             idle_timeout: float) -> str | None:
  """The first failure seen now, as a message, or None while all is well."""
  now = time.monotonic()
  # A process killed by a signal first: its peers then fail too, with their own errors.
  dead = sorted((code > 0, i, p) for i, p in enumerate(processes) if (code := p.popen.poll()))
  if dead:
    _, i, p = dead[0]
    for reader in p.readers:
      reader.join(timeout=2)  # Its last words.
    return (f"process {i} of {len(processes)} ({p.name}, pid {p.popen.pid}) "
            f"{_exit_cause(p.popen.returncode)}; its stderr ends:\n{p.tail()}")
  running = [(p.last_output, i, p) for i, p in enumerate(processes) if p.popen.poll() is None]
  if not running:
    return None
  last, i, p = min(running, key=lambda r: r[0])
  if now - start > timeout or now - last > idle_timeout:
    why = (f"still running after the run's {timeout:.0f} s" if now - start > timeout
           else f"printed nothing for {now - last:.0f} s")
    return (f"process {i} of {len(processes)} ({p.name}, pid {p.popen.pid}) hung: {why}; "
            f"its stderr ends:\n{p.tail()}")
  return None


def run(commands: Sequence[Sequence[str]], names: Sequence[str], *, timeout: float = 300,
        idle_timeout: float = 45, env=None, log=None, on_stdout=None) -> list[str]:
  """Runs the commands side by side; returns their stdouts once every one exits 0.

  ``names[i]`` names process ``i`` in messages; ``log(line)``, if given, hears when each
  starts (with its pid); ``on_stdout(i, line)`` hears each line process ``i`` prints.
  Raises `LaunchError` on the first process that dies or hangs (no output for
  ``idle_timeout`` s, or the run past ``timeout`` s), after killing all.
  """
  processes = []
  meeting = tempfile.TemporaryDirectory(prefix="crossgrad-launch-")
  env = dict(os.environ if env is None else env, **{MEETING_ENV: meeting.name})
  try:
    for name, command in zip(names, commands):
      index = len(processes)
      hook = on_stdout and (lambda line, index=index: on_stdout(index, line))
      processes.append(_start(name, command, env, hook))
      if log:
        log(f"started process {len(processes) - 1} ({name}): pid {processes[-1].popen.pid}")
    start = time.monotonic()
    while any(p.popen.poll() is None for p in processes):
      message = _failure(processes, start, timeout, idle_timeout)
      if message:
        raise LaunchError(message)
      time.sleep(POLL_SECONDS)
    message = _failure(processes, start, timeout, idle_timeout)
    if message:
      raise LaunchError(message)
    for p in processes:
      for reader in p.readers:
        reader.join(timeout=10)  # The last lines.
    return ["".join(p.stdout) for p in processes]
  finally:
    _kill(processes)
    meeting.cleanup()
