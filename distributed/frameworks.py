"""Joins this process to a local multi-process group in JAX, TensorFlow or PyTorch.

Every process of a run calls the same function with its own ``process_id``, the group's
size and the ports the launcher chose (`launch.free_ports`): JAX uses ``ports[0]`` for its
coordinator (`jax.distributed.initialize`, CPU collectives over gloo); TensorFlow gives
worker ``i`` the port ``ports[i]`` in ``TF_CONFIG`` (`MultiWorkerMirroredStrategy`);
PyTorch rendezvous at ``ports[0]`` (`torch.distributed`, gloo). Each first claims the port
it will listen on (`launch.claim_port`), and every wait is bounded by ``timeout`` seconds.
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Sequence

from crossgrad.distributed import launch


def _name(framework: str, process_id: int) -> str:
  return f"{framework} process {process_id}"


def jax_initialize(process_id: int, num_processes: int, ports: Sequence[int],
                   timeout: int = 60) -> None:
  """`jax.distributed.initialize` on `launch.HOST`: afterwards ``jax.devices()`` lists
  every process's CPU device and jitted computations over them all-reduce over gloo."""
  import jax  # pylint: disable=g-import-not-at-top
  if process_id == 0:
    launch.claim_port(ports[0], _name("jax", process_id))
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(f"{launch.HOST}:{ports[0]}", num_processes, process_id,
                             initialization_timeout=timeout, heartbeat_timeout_seconds=timeout,
                             shutdown_timeout_seconds=timeout)


def tensorflow_strategy(process_id: int, num_processes: int, ports: Sequence[int],
                        timeout: int = 60):
  """A `tf.distribute.MultiWorkerMirroredStrategy` over ``num_processes`` local workers
  (one CPU replica each), set up through ``TF_CONFIG``."""
  launch.claim_port(ports[process_id], _name("tensorflow", process_id))
  os.environ["TF_CONFIG"] = json.dumps({
      "cluster": {"worker": [f"{launch.HOST}:{p}" for p in ports[:num_processes]]},
      "task": {"type": "worker", "index": process_id}})
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout)
  return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def torch_initialize(process_id: int, num_processes: int, ports: Sequence[int],
                     timeout: int = 60) -> None:
  """`torch.distributed.init_process_group` with the gloo backend (CPU collectives)."""
  import torch.distributed as dist  # pylint: disable=g-import-not-at-top
  if process_id == 0:
    launch.claim_port(ports[0], _name("torch", process_id))
  dist.init_process_group("gloo", init_method=f"tcp://{launch.HOST}:{ports[0]}",
                          rank=process_id, world_size=num_processes,
                          timeout=datetime.timedelta(seconds=timeout))
