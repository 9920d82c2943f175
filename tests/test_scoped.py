"""`crossgrad.backends.common.scoped.Switch`: off inside a scope, nested scopes restore, and a
scope in one thread leaves the others' switch on."""

import threading

from crossgrad.backends.common import scoped


def test_a_switch_is_off_inside_its_scope_and_restored_after():
  switch = scoped.Switch("test_switch")
  assert switch.on()
  with switch.off():
    assert not switch.on()
    with switch.off():
      assert not switch.on()
    assert not switch.on()  # The outer scope is still open.
  assert switch.on()


def test_a_scope_in_one_thread_leaves_other_threads_on():
  switch = scoped.Switch("test_switch_threads")
  entered, release, seen = threading.Event(), threading.Event(), []

  def hold_a_scope():
    with switch.off():
      entered.set()
      release.wait(10)

  holder = threading.Thread(target=hold_a_scope)
  holder.start()
  entered.wait(10)
  other = threading.Thread(target=lambda: seen.append(switch.on()))
  other.start()
  other.join()
  seen.append(switch.on())  # This thread.
  release.set()
  holder.join()
  assert seen == [True, True]
