"""The codebook-tied BEiT head folds exactly into a linear head (same softmax, same argmax)."""

import torch

from vitviz.models.beit import BEiTForMIM
from vitviz.models.registry import BEIT_TINY_CONFIG
from vitviz.training.codebook_head import CodebookHead
from vitviz.training.train_beit import exportable


def test_folded_head_gives_the_same_distribution():
    g = torch.Generator().manual_seed(0)
    book = torch.randn(32, 8, generator=g)
    head = CodebookHead(16, book)
    with torch.no_grad():
        head.proj.weight.normal_(generator=g)
        head.proj.bias.normal_(generator=g)
    h = torch.randn(5, 7, 16, generator=g)
    a = head(h).log_softmax(-1)
    b = head.folded()(h).log_softmax(-1)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    # the logits rank codes by distance from the predicted point
    z = head.point(h)
    nearest = torch.cdist(z.reshape(-1, 8), book).argmin(-1).reshape(5, 7)
    assert torch.equal(head(h).argmax(-1), nearest)


def test_exportable_model_has_the_usual_head_and_same_predictions():
    model = BEiTForMIM(BEIT_TINY_CONFIG).eval()
    book = torch.randn(BEIT_TINY_CONFIG.vocab_size, 8, generator=torch.Generator().manual_seed(1))
    model.lm_head = CodebookHead(BEIT_TINY_CONFIG.embed_dim, book)
    with torch.no_grad():
        model.lm_head.proj.weight.normal_(std=0.1, generator=torch.Generator().manual_seed(2))
    out = exportable(model).eval()
    assert isinstance(out.lm_head, torch.nn.Linear)
    assert set(out.state_dict()) == set(BEiTForMIM(BEIT_TINY_CONFIG).state_dict())
    x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(3))
    mask = torch.zeros(1, BEIT_TINY_CONFIG.num_patches, dtype=torch.bool)
    mask[0, :40] = True
    with torch.no_grad():
        torch.testing.assert_close(model(x, mask).log_softmax(-1), out(x, mask).log_softmax(-1),
                                   rtol=1e-3, atol=1e-3)
