"""A multi-process run whose worker dies, hangs or finds its port taken fails fast and
cleanly: `crossgrad.distributed.launch` raises `LaunchError` naming the process and the
cause, and no process of the run is left alive.

The end-to-end cases kill a real worker of the data-parallel example (2 JAX processes in
their step loop of collectives, and through the example's own launcher) with SIGKILL; a hang is a worker stopped with SIGSTOP while its
peer keeps printing; a taken port is one this test holds while a torch worker claims it.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from crossgrad.distributed import launch
from crossgrad.examples import data_parallel

BOUND = 60  # Seconds the launcher may take to report a fault: within a minute.
TICKER = [sys.executable, "-u", "-c",
          "import time\nwhile True:\n  print('tick', flush=True)\n  time.sleep(0.2)"]


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
    return f.read().split(")")[-1].split()[0] != "Z"  # A zombie has exited.


def _run_and_fault(commands, fault, **kwargs):
  """Runs ``commands`` with `launch.run` in a thread; ``fault(pids)`` once all started.
  Returns the LaunchError and the pids."""
  pids, started, outcome = [], threading.Event(), {}

  def log(line):
    pids.append(int(line.rsplit(" ", 1)[1]))
    if len(pids) == len(commands):
      started.set()

  def target():
    try:
      launch.run(commands, [f"worker {i}" for i in range(len(commands))], log=log, **kwargs)
    except launch.LaunchError as e:
      outcome["error"] = e

  thread = threading.Thread(target=target, daemon=True)
  thread.start()
  assert started.wait(BOUND)
  fault(pids)
  thread.join(BOUND)
  assert not thread.is_alive(), f"the launcher did not report the fault within {BOUND} s"
  assert "error" in outcome, "a faulty run must raise LaunchError"
  assert not any(_alive(pid) for pid in pids), "a process of the run was left behind"
  return outcome["error"], pids


def test_a_hung_worker_is_named_and_every_process_killed():
  error, pids = _run_and_fault([TICKER, TICKER], lambda pids: os.kill(pids[1], signal.SIGSTOP),
                               idle_timeout=3)
  assert f"process 1 of 2 (worker 1, pid {pids[1]}) hung: printed nothing" in str(error)


def test_a_taken_port_is_named():
  with socket.socket() as held:
    held.bind((launch.HOST, 0))
    held.listen()
    port = held.getsockname()[1]
    join = ("import sys; from crossgrad.distributed import frameworks; "
            f"frameworks.torch_initialize(int(sys.argv[1]), 2, [{port}], timeout=30)")
    commands = [[sys.executable, "-c", join, str(i)] for i in range(2)]
    error, _ = _run_and_fault(commands, lambda pids: None, idle_timeout=50)
  assert "process 0 of 2 (worker 0" in str(error) and "exited with status 1" in str(error)
  assert f"port {port} is taken" in str(error)


def test_killing_a_worker_of_the_data_parallel_example_in_its_step_loop():
  """The example's 2 JAX workers, killed once both have stepped (in their collectives)."""
  stepping = [threading.Event(), threading.Event()]

  def on_stdout(index, line):
    if line.startswith("step "):
      stepping[index].set()

  def kill_when_stepping(pids):
    assert all(event.wait(4 * BOUND) for event in stepping), "the workers never stepped"
    os.kill(pids[1], signal.SIGKILL)

  ports = launch.free_ports(2)
  commands = [data_parallel._worker_command("jax", i, 2, ports, 10**6, 0) for i in range(2)]
  error, pids = _run_and_fault(commands, kill_when_stepping, idle_timeout=4 * BOUND,
                               on_stdout=on_stdout)
  assert f"process 1 of 2 (worker 1, pid {pids[1]}) killed by signal 9 (SIGKILL)" in str(error)


def test_the_example_exits_1_naming_the_dead_worker():
  """The example's own launcher: its worker 1 killed as soon as it starts."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  command = [sys.executable, "-m", "crossgrad.examples.data_parallel", "--processes=2",
             "--frameworks=jax", "--steps=1000000"]
  parent = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
  watchdog = threading.Timer(4 * BOUND, parent.kill)  # Never blocks the suite on a read.
  watchdog.start()
  pids = {}
  try:
    for line in parent.stderr:
      if line.startswith("started process"):
        pids[int(line.split()[2])] = int(line.rsplit(" ", 1)[1])
        if len(pids) == 3:  # 2 workers and the single-process run.
          break
    assert len(pids) == 3, "the example did not start its processes"
    os.kill(pids[1], signal.SIGKILL)
    rest = parent.communicate(timeout=BOUND)[1]
  finally:
    watchdog.cancel()
    if parent.poll() is None:
      parent.kill()
      parent.wait()
  assert parent.returncode == 1
  assert f"process 1 of 3 (jax worker 1, pid {pids[1]}) killed by signal 9 (SIGKILL)" in rest
  assert not any(_alive(pid) for pid in pids.values())


def test_free_ports_are_distinct_and_free():
  ports = launch.free_ports(4)
  assert len(set(ports)) == 4
  for port in ports:
    launch.claim_port(port, "test")  # Free: no error.
  with socket.socket() as held:
    held.bind((launch.HOST, ports[0]))
    with pytest.raises(launch.LaunchError, match=f"test: port {ports[0]} is taken"):
      launch.claim_port(ports[0], "test")


def test_a_worker_that_exits_skips_a_teardown_that_would_abort_it():
  """`launch.exit_worker`: the status given and the output written, with no interpreter
  teardown; a teardown that aborts (as torch's gloo threads may, see its docstring) would
  end the process with SIGABRT."""
  script = ("import atexit, os; from crossgrad.distributed import launch; "
            "atexit.register(os.abort); print('result', end=''); launch.exit_worker(0)")
  done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        check=False)
  control = subprocess.run([sys.executable, "-c", "import atexit, os; atexit.register(os.abort)"],
                           capture_output=True, check=False)
  assert (done.returncode, done.stdout) == (0, "result")
  assert control.returncode == -signal.SIGABRT


def test_a_worker_of_a_group_exits_only_once_its_peers_have_finished(tmp_path):
  """`launch.exit_worker(group=...)`: rank 0 of 2 waits at the meeting folder `run` names
  until rank 1 arrives, then exits with its status; outside `run` it waits for nobody."""
  script = ("from crossgrad.distributed import launch; print('done', flush=True); "
            "launch.exit_worker(3, group='tf', rank=0, size=2)")
  env = dict(os.environ, **{launch.MEETING_ENV: str(tmp_path)})
  waiting = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                             text=True)
  assert waiting.stdout.readline() == "done\n"
  time.sleep(1.0)
  assert waiting.poll() is None and (tmp_path / "tf.0").exists()
  (tmp_path / "tf.1").touch()  # Rank 1 arrives.
  assert waiting.wait(timeout=30) == 3
  alone = dict(os.environ)
  alone.pop(launch.MEETING_ENV, None)
  assert subprocess.run([sys.executable, "-c", script], env=alone, capture_output=True,
                        timeout=30, check=False).returncode == 3


def test_run_gives_its_processes_a_meeting_folder_and_removes_it():
  script = (f"import os; folder = os.environ[{launch.MEETING_ENV!r}]; "
            "print(folder, os.path.isdir(folder))")
  (out,) = launch.run([[sys.executable, "-c", script]], ["meeting"])
  folder, exists = out.split()
  assert exists == "True" and not os.path.exists(folder)
