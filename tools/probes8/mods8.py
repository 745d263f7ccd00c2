"""torch.nn modules with uncommon constructor arguments, trained for a few SGD steps inside
one compiled step function: outputs, losses, parameters, buffers and grads against eager's."""
import torch
import torch.nn as nn

from probe2 import scenario


def _x(shape, seed=0.37):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(float(n)).reshape(shape).mul(seed).sin() * 2


def _train(C, R, make, x, steps=3, eval_after=True):
    import torchc
    torchc.reset()   # every step function shares one code object: no recompile limit
    torch.manual_seed(0)
    m = make()
    opt = torch.optim.SGD(m.parameters(), lr=0.05) if any(True for _ in m.parameters()) else None

    def step(x):
        out = m(x)
        if isinstance(out, tuple):
            out = out[0]
        if isinstance(out, torch.nn.utils.rnn.PackedSequence):
            out = out.data
        loss = (out.float() * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum()
        if opt is not None:
            opt.zero_grad()
            loss.backward()
            opt.step()
        return out.detach(), loss.detach()
    g = C(step)
    m.train()
    for i in range(steps):
        R.call(g, x * (1 + 0.1 * i))
    R(m)
    if eval_after:
        m.eval()
        with torch.no_grad():
            R.call(C(lambda x: m(x)), x)


@scenario(rtol=1e-5, atol=1e-5)
def conv_variants(C, R):
    x1, x2, x3 = _x((2, 4, 9)), _x((2, 4, 7, 6)), _x((1, 2, 4, 5, 3))
    makers = [(lambda: nn.Conv1d(4, 6, 3, padding="same", padding_mode="reflect"), x1),
              (lambda: nn.Conv1d(4, 4, 3, padding=2, dilation=2, groups=4, padding_mode="circular"), x1),
              (lambda: nn.Conv1d(4, 2, 4, stride=3, padding="valid", bias=False), x1),
              (lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), padding_mode="replicate"), x2),
              (lambda: nn.Conv2d(4, 8, 3, padding="same", dilation=(2, 1), groups=2), x2),
              (lambda: nn.Conv3d(2, 3, (2, 3, 1), padding=(1, 0, 0), stride=(1, 2, 1)), x3),
              (lambda: nn.ConvTranspose1d(4, 3, 3, stride=2, output_padding=1), x1),
              (lambda: nn.ConvTranspose1d(4, 4, 2, stride=2, groups=2, dilation=2, padding=1), x1),
              (lambda: nn.ConvTranspose2d(4, 2, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2)), x2),
              (lambda: nn.ConvTranspose2d(4, 4, 3, groups=4, bias=False), x2),
              (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), x3)]
    for make, x in makers:
        _train(C, R, make, x)
        _train(C, R, make, x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x.transpose(-1, -2).contiguous().transpose(-1, -2), steps=1, eval_after=False)


@scenario(rtol=1e-5, atol=1e-5)
def norm_variants(C, R):
    x2, x3, x4 = _x((6, 4)), _x((3, 4, 5)), _x((2, 4, 3, 3))
    makers = [(lambda: nn.BatchNorm1d(4, momentum=None), x2), (lambda: nn.BatchNorm1d(4, momentum=None), x3),
              (lambda: nn.BatchNorm1d(4, affine=False, momentum=0.5), x2), (lambda: nn.BatchNorm1d(4, track_running_stats=False), x3),
              (lambda: nn.BatchNorm2d(4, eps=0.1, momentum=0.0), x4), (lambda: nn.InstanceNorm1d(4, affine=True, track_running_stats=True), x3),
              (lambda: nn.InstanceNorm2d(4, track_running_stats=True, momentum=None), x4), (lambda: nn.InstanceNorm2d(4), x4),
              (lambda: nn.GroupNorm(2, 4, eps=1e-3, affine=False), x4), (lambda: nn.GroupNorm(4, 4), x3),
              (lambda: nn.LayerNorm((4, 5), elementwise_affine=False), x3), (lambda: nn.LayerNorm(5, bias=False), x3),
              (lambda: nn.RMSNorm(5, eps=None), x3), (lambda: nn.RMSNorm((4, 5), elementwise_affine=False), x3),
              (lambda: nn.LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0), x4)]
    for make, x in makers:
        _train(C, R, make, x)


@scenario(rtol=1e-5, atol=1e-5)
def activation_modules(C, R):
    x = _x((3, 8))
    makers = [lambda: nn.PReLU(), lambda: nn.PReLU(8, init=-0.1), lambda: nn.CELU(0.5), lambda: nn.SELU(), lambda: nn.GLU(),
              lambda: nn.Hardshrink(0.7), lambda: nn.Softshrink(0.3), lambda: nn.Tanhshrink(), lambda: nn.Threshold(0.2, -5.0),
              lambda: nn.LogSigmoid(), lambda: nn.Softsign(), lambda: nn.Mish(), lambda: nn.Hardswish(), lambda: nn.Hardsigmoid(),
              lambda: nn.ELU(alpha=2.0), lambda: nn.LeakyReLU(-0.2), lambda: nn.ReLU6(), lambda: nn.SiLU(), lambda: nn.Softplus(beta=2, threshold=1),
              lambda: nn.Softmax2d() if False else nn.Softmin(0), lambda: nn.LogSoftmax(-1), lambda: nn.Hardtanh(-0.5, 0.25),
              lambda: nn.GELU("tanh"), lambda: nn.Sequential(nn.Linear(8, 8), nn.Threshold(0.1, 20), nn.Linear(8, 2)),
              lambda: nn.Bilinear(8, 8, 3) if False else nn.Sequential(nn.Unflatten(1, (2, 4)), nn.Flatten(0))]
    for make in makers:
        _train(C, R, make, x)
    _train(C, R, lambda: nn.PReLU(4), _x((2, 4, 3, 3)).contiguous(memory_format=torch.channels_last))


@scenario(rtol=1e-5, atol=1e-5)
def pool_pad_upsample_modules(C, R):
    x4, x3 = _x((2, 3, 7, 6)), _x((2, 3, 9))
    makers = [(lambda: nn.MaxPool2d(3, 2, padding=1, dilation=1, ceil_mode=True), x4), (lambda: nn.MaxPool2d((2, 3), dilation=(2, 1)), x4),
              (lambda: nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False), x4),
              (lambda: nn.AvgPool2d(2, divisor_override=3), x4), (lambda: nn.AvgPool1d(4, 3, padding=2, ceil_mode=True), x3),
              (lambda: nn.MaxPool1d(2, 2, return_indices=False, ceil_mode=True), x3), (lambda: nn.LPPool2d(3, 2), x4),
              (lambda: nn.LPPool1d(1, 3), x3), (lambda: nn.AdaptiveAvgPool2d((5, None)), x4), (lambda: nn.AdaptiveMaxPool2d((3, 4)), x4),
              (lambda: nn.AdaptiveAvgPool1d(4), x3), (lambda: nn.AdaptiveMaxPool1d(5), x3),
              (lambda: nn.ReflectionPad2d((1, 2, 0, 3)), x4), (lambda: nn.ReplicationPad1d((3, 1)), x3),
              (lambda: nn.CircularPad2d(2), x4), (lambda: nn.ZeroPad2d((-1, 2, 1, -2)), x4), (lambda: nn.ConstantPad1d(2, 3.5), x3),
              (lambda: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=False), x4),
              (lambda: nn.Upsample(size=(4, 9), mode="bicubic"), x4), (lambda: nn.Upsample(scale_factor=2, mode="nearest"), x3),
              (lambda: nn.UpsamplingNearest2d(scale_factor=2), x4), (lambda: nn.UpsamplingBilinear2d(size=(3, 3)), x4),
              (lambda: nn.PixelShuffle(1), x4), (lambda: nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=2), x4),
              (lambda: nn.Sequential(nn.Unfold(2), nn.Fold((7, 6), 2)), x4)]
    for make, x in makers:
        _train(C, R, make, x)


@scenario(rtol=1e-5, atol=1e-5)
def rnn_variants(C, R):
    x = _x((4, 3, 5))
    makers = [lambda: nn.LSTM(5, 6, num_layers=2, bidirectional=True, proj_size=3), lambda: nn.LSTM(5, 4, batch_first=True, bias=False),
              lambda: nn.GRU(5, 4, num_layers=2, dropout=0.0, bidirectional=True), lambda: nn.RNN(5, 4, nonlinearity="relu"),
              lambda: nn.RNN(5, 3, num_layers=3, batch_first=True, bidirectional=True)]
    for make in makers:
        _train(C, R, make, x)
    cells = [lambda: nn.LSTMCell(5, 4), lambda: nn.GRUCell(5, 4, bias=False), lambda: nn.RNNCell(5, 4, nonlinearity="relu")]
    for make in cells:
        _train(C, R, make, x[0])


@scenario(rtol=1e-5, atol=1e-5)
def misc_layers(C, R):
    x = _x((3, 6))
    makers = [(lambda: nn.Bilinear(6, 6, 2), None), (lambda: nn.Embedding(10, 3, max_norm=1.0, norm_type=1.0), "idx"),
              (lambda: nn.Embedding(10, 3, padding_idx=2, scale_grad_by_freq=True), "idx"),
              (lambda: nn.EmbeddingBag(10, 3, mode="max"), "idx2"), (lambda: nn.Linear(6, 0), None), (lambda: nn.Linear(6, 1, bias=False), None),
              (lambda: nn.Dropout1d(0.0), "3d"), (lambda: nn.AlphaDropout(0.0), None), (lambda: nn.CosineSimilarity(0), None),
              (lambda: nn.PairwiseDistance(p=3, keepdim=True), None), (lambda: nn.Identity(54, unused=1), None),
              (lambda: nn.ChannelShuffle(2), "4d"), (lambda: nn.Flatten(0, -1), None), (lambda: nn.Unflatten(-1, (2, 3)), None)]
    for make, kind in makers:
        if kind == "idx":
            inp = torch.tensor([[1, 2, 2], [9, 0, 2]])
            torch.manual_seed(0)
            m = make()
            cm = C(lambda i: m(i))
            for k in range(2):
                out = R.call(cm, inp)
                if out is not None:
                    out.pow(2).sum().backward()
                    R((m.weight.clone(), m.weight.grad))
                    m.zero_grad()
            continue
        if kind == "idx2":
            torch.manual_seed(0)
            m = make()
            R.call(C(lambda i: m(i)), torch.tensor([[1, 2, 2], [9, 0, 2]]))
            continue
        if make().__class__ is nn.Bilinear:
            torch.manual_seed(0)
            m = make()
            R.call(C(lambda a, b: m(a, b)), x, x.flip(0))
            continue
        if kind in ("3d", "4d"):
            _train(C, R, make, _x((2, 4, 3)) if kind == "3d" else _x((2, 4, 3, 3)))
            continue
        if isinstance(make(), (nn.CosineSimilarity, nn.PairwiseDistance)):
            R.call(C(lambda a, b, m=make(): m(a, b)), x, x.flip(1))
            continue
        _train(C, R, make, x)
