"""The torch.nn.Module layers: values and gradients from the NumPy reference."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (crossgrad[torch])")

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position
from crossgrad.layers import torch_center_loss  # pylint: disable=wrong-import-position
from crossgrad.layers import torch_positive_dense  # pylint: disable=wrong-import-position

RNG = np.random.default_rng(0)


def test_center_loss_module_trains_centers_by_the_paper_rule():
  layer = torch_center_loss.CenterLoss(num_classes=4, dim=3, weight=0.5, dtype=torch.float64)
  with torch.no_grad():
    layer.centers.copy_(torch.as_tensor(RNG.standard_normal((4, 3))))
  x = torch.tensor(RNG.standard_normal((6, 3)), requires_grad=True)
  labels = torch.tensor([0, 1, 1, 2, 0, 1])
  loss = layer(x, labels)
  loss.backward()
  ref, vjp = cg.numpy.vjp("center_loss", x.detach().numpy(), labels.numpy().astype(np.int32),
                          layer.centers.detach().numpy())
  dx, _, dc = vjp(np.float64(0.5))
  np.testing.assert_allclose(loss.item(), 0.5 * ref, rtol=1e-12)
  np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-12)
  np.testing.assert_allclose(layer.centers.grad.numpy(), dc, rtol=1e-12)
  assert not layer.centers.grad[3].any()  # Class 3 has no sample: its center stays.


def test_positive_dense_module():
  layer = torch_positive_dense.PositiveDense(5, 3, dtype=torch.float64)
  assert layer.kernel.shape == (3, 5) and (layer.kernel >= 0).all()
  assert (layer.kernel <= np.sqrt(6.0 / 8)).all()
  with torch.no_grad():
    layer.kernel.copy_(torch.as_tensor(RNG.standard_normal((3, 5)) + 0.1))
    layer.bias.copy_(torch.as_tensor(RNG.standard_normal(3)))
  x = torch.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
  y = layer(x)
  g = RNG.standard_normal(y.shape)
  y.backward(torch.as_tensor(g))
  kernel = layer.kernel.detach().numpy()
  np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() @ np.maximum(kernel, 0).T
                             + layer.bias.detach().numpy(), rtol=1e-12)
  np.testing.assert_allclose(layer.kernel.grad.numpy(), np.where(kernel > 0, g.T @ x.detach()
                                                                  .numpy(), 0), rtol=1e-12)
  np.testing.assert_allclose(layer.bias.grad.numpy(), g.sum(0), rtol=1e-12)
  np.testing.assert_array_equal(layer.effective_kernel.detach().numpy(), np.maximum(kernel, 0))
