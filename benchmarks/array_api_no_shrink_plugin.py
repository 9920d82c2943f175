"""A pytest plugin for array-api-tests: the suite's Hypothesis profile without the shrink phase.

Used by ``array_api_conformance`` unless ``--shrink``: shrinking only simplifies the example
a failing test reports (the outcome is already decided), and it dominates the time of a
namespace with many failures (tensorflow strict: over 30 minutes on 2 cores).
"""

import pytest
from hypothesis import Phase
from hypothesis import settings


@pytest.hookimpl(trylast=True)  # After the suite's conftest has loaded its profile.
def pytest_configure(config):
  del config
  settings.register_profile("array-api-tests-no-shrink", parent=settings.default,
                            phases=[Phase.explicit, Phase.reuse, Phase.generate])
  settings.load_profile("array-api-tests-no-shrink")
