#!/usr/bin/python3
"""The nets of net_models.c in PyTorch: ResNet-18, MobileNetV2 and a small
UNet, with seeded random weights, written in the FVW1 format that
net_models.c reads; plus an input and the FP32 reference output per case.

    /usr/bin/python3 apps/common/net_models.py --out DIR \\
        [--case resnet18:1:224] [--case mobilenet_v2:1:224] [--case unet:2:64] \\
        [--seed 1] [--unet-base 32] [--unet-classes 4] [--no-torchvision]

writes, for each model named by a case, DIR/<model>.fvw (its weights), and
for each case DIR/<model>_n<N>_s<S>.io.fvw (tensors "input", (N, 3, S, S)
drawn from normal(0, 1), and "output", the model's FP32 output: (N, 1000)
logits, or (N, classes, S, S) for the UNet). Without --case: the three
cases above (what tests/unit/test_net_models.c runs).

The nets:
  resnet18, mobilenet_v2: torchvision.models.resnet18 / mobilenet_v2
    (weights=None), eval mode; where torchvision is missing (or with
    --no-torchvision) definitions here with the same modules, state_dict
    names and forward (checked against torchvision's when both exist).
  unet: below (class UNet): four levels of two 3x3 conv + BN + ReLU each
    (widths base, 2 base, 4 base, 8 base), 2x2 max pooling down, bilinear
    x2 upsampling (align_corners=False) up, the upsampled tensor
    concatenated before the skip, a final 1x1 conv (with bias) to classes.
    Input sizes must divide by 8.

Weights (seeded, independent of torch's init schemes, the same on every
torch version): conv weights normal(0, sqrt(2 / fan_in)); linear and conv
biases uniform(+-1/sqrt(fan_in)); BatchNorm (eps 1e-5) gamma uniform [0.5,
1.5], beta uniform [-0.25, 0.25], running_mean uniform [-0.25, 0.25],
running_var uniform [0.5, 2]: not the trivial mean 0 / var 1 of a fresh
model, so that BN folding is really tested.

FVW1 (little endian): b"FVW1", u32 count, then count records: u32 name
length (1..1024), the name (UTF-8, PyTorch's state_dict key), u32 ndims
(0..8), i64 dims[ndims] (each >= 1), float32 data (row-major, PyTorch's
order); nothing after the last record. Non-float entries
(num_batches_tracked) are not written.

Works with PyTorch 1.13 (Debian's python3-torch, CPU) and 2.x. Exit status
1, with the reason, when torch cannot be imported (the tests need it).
"""
import argparse
import math
import os
import struct
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the C tests turn this into a failure, with this message
    sys.stderr.write(f"net_models.py: cannot import torch with {sys.executable}: {e}\n"
                     "  install PyTorch for this interpreter (Debian: apt-get install "
                     "python3-torch python3-torchvision; CI does)\n")
    sys.exit(1)

MODELS = ("resnet18", "mobilenet_v2", "unet")
DEFAULT_CASES = ("resnet18:1:224", "mobilenet_v2:1:224", "unet:2:64")
MAGIC = b"FVW1"
BN_EPS = 1e-5


# ---- UNet ---------------------------------------------------------------------
def double_conv(cin, cout):
    """Indices 0..5: conv, bn, relu, conv, bn, relu (state_dict: .0 .1 .3 .4)."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def up2(x):
    return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


class UNet(nn.Module):
    def __init__(self, in_ch=3, classes=4, base=32):
        super().__init__()
        b = base
        self.enc1 = double_conv(in_ch, b)
        self.enc2 = double_conv(b, 2 * b)
        self.enc3 = double_conv(2 * b, 4 * b)
        self.bottleneck = double_conv(4 * b, 8 * b)
        self.dec3 = double_conv(8 * b + 4 * b, 4 * b)
        self.dec2 = double_conv(4 * b + 2 * b, 2 * b)
        self.dec1 = double_conv(2 * b + b, b)
        self.head = nn.Conv2d(b, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        m = self.bottleneck(F.max_pool2d(e3, 2))
        d3 = self.dec3(torch.cat([up2(m), e3], 1))
        d2 = self.dec2(torch.cat([up2(d3), e2], 1))
        d1 = self.dec1(torch.cat([up2(d2), e1], 1))
        return self.head(d1)


# ---- torchvision's nets, for machines without torchvision -----------------------
class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, c in enumerate((64, 128, 256, 512)):
            s = 1 if i == 0 else 2
            blocks = nn.Sequential(BasicBlock(cin, c, s), BasicBlock(c, c, 1))
            setattr(self, f"layer{i + 1}", blocks)
            cin = c
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def conv_bn_act(cin, cout, k, stride, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = cin * t
        self.use_res_connect = stride == 1 and cin == cout
        layers = [conv_bn_act(cin, hidden, 1, 1)] if t != 1 else []
        layers += [conv_bn_act(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                         (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))  # t, c, n, s


class MobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        feats = [conv_bn_act(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in MOBILENET_V2_SETTINGS:
            for i in range(n):
                feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(conv_bn_act(cin, 1280, 1, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def torchvision_models():
    try:
        import torchvision
        return torchvision.models
    except Exception:  # absent, or broken against this torch
        return None


def make_model(name, use_torchvision=True, unet_base=32, unet_classes=4):
    """The model, eval mode, default (not yet randomized) weights; and where it came from."""
    if name == "unet":
        return UNet(classes=unet_classes, base=unet_base).eval(), "net_models.py"
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r} (one of {', '.join(MODELS)})")
    tvm = torchvision_models() if use_torchvision else None
    if tvm is not None:
        return getattr(tvm, name)(weights=None).eval(), "torchvision"
    return (ResNet18() if name == "resnet18" else MobileNetV2()).eval(), "net_models.py"


# ---- weights --------------------------------------------------------------------
def randomize(model, seed):
    """Seeded weights, by state_dict order (see the module's doc)."""
    g = torch.Generator().manual_seed(seed)

    def uni(shape, lo, hi):
        return torch.rand(shape, generator=g) * (hi - lo) + lo

    mods = dict(model.named_modules())
    with torch.no_grad():
        for key, t in model.state_dict().items():
            if not t.is_floating_point():
                continue
            mod_name, _, param = key.rpartition(".")
            m = mods[mod_name]
            if isinstance(m, nn.BatchNorm2d):
                v = {"weight": lambda: uni(t.shape, 0.5, 1.5),
                     "bias": lambda: uni(t.shape, -0.25, 0.25),
                     "running_mean": lambda: uni(t.shape, -0.25, 0.25),
                     "running_var": lambda: uni(t.shape, 0.5, 2.0)}[param]()
                m.eps = BN_EPS
            elif isinstance(m, (nn.Conv2d, nn.Linear)):
                w = m.weight
                fan_in = w.shape[1] * (w[0, 0].numel() if w.dim() > 2 else 1)
                if param == "weight":
                    v = torch.randn(t.shape, generator=g) * math.sqrt(2.0 / fan_in)
                else:
                    v = uni(t.shape, -1, 1) / math.sqrt(fan_in)
            else:
                raise ValueError(f"randomize: unexpected tensor {key} in a {type(m).__name__}")
            t.copy_(v)
    return model


def same_structure(a, b):
    """'' when a's and b's state_dicts have the same keys and shapes, else what differs."""
    sa, sb = a.state_dict(), b.state_dict()
    if list(sa) != list(sb):
        diff = sorted(set(sa) ^ set(sb))[:5]
        return f"keys differ (first: {diff or 'the order'})"
    bad = [k for k in sa if sa[k].shape != sb[k].shape]
    return f"shapes differ: {bad[:5]}" if bad else ""


# ---- FVW1 ---------------------------------------------------------------------------
def _f32_bytes(t):
    import array
    t = t.detach().to("cpu", torch.float32).contiguous()
    try:
        a = array.array("f", t.numpy().tobytes())
    except (ImportError, RuntimeError):  # torch without numpy: slower, the same bytes
        a = array.array("f", t.reshape(-1).tolist())
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def write_fvw(path, tensors):
    """tensors: (name, tensor) pairs; float entries only, others are skipped."""
    recs = [(k, v) for k, v in tensors if v.is_floating_point()]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(recs)))
        for name, t in recs:
            nb = name.encode()
            if not 1 <= len(nb) <= 1024 or t.dim() > 8 or t.numel() == 0:
                raise ValueError(f"write_fvw: cannot store {name!r} {tuple(t.shape)}")
            f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", t.dim()))
            f.write(struct.pack(f"<{t.dim()}q", *t.shape))
            f.write(_f32_bytes(t))
    os.replace(tmp, path)  # never a half-written file under the real name


def read_fvw(path):
    """{name: float32 tensor} of an FVW1 file (for checks; the C reader is the strict one)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != MAGIC:
        raise ValueError(f"{path}: not an FVW1 file")
    (count,), off, out = struct.unpack_from("<I", data, 4), 8, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, off)
        name = data[off + 4:off + 4 + n].decode()
        off += 4 + n
        (nd,) = struct.unpack_from("<I", data, off)
        dims = struct.unpack_from(f"<{nd}q", data, off + 4)
        off += 4 + 8 * nd
        cnt = math.prod(dims) if dims else 1
        t = torch.frombuffer(bytearray(data[off:off + 4 * cnt]), dtype=torch.float32)
        out[name] = t.reshape(dims).clone()
        off += 4 * cnt
    return out


# ---- cases ------------------------------------------------------------------------------
def parse_case(s):
    try:
        name, n, size = s.split(":")
        n, size = int(n), int(size)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--case {s}: give MODEL:BATCH:SIZE, e.g. resnet18:1:224")
    if name not in MODELS or n < 1 or size < 8 or (name == "unet" and size % 8):
        raise argparse.ArgumentTypeError(
            f"--case {s}: MODEL one of {', '.join(MODELS)}, BATCH >= 1, SIZE >= 8 "
            "(the UNet's divisible by 8)")
    return name, n, size


def weights_path(out_dir, name):
    return os.path.join(out_dir, f"{name}.fvw")


def io_path(out_dir, name, n, size):
    return os.path.join(out_dir, f"{name}_n{n}_s{size}.io.fvw")


def case_input(n, size, seed):
    g = torch.Generator().manual_seed(seed * 1000003 + n * 1009 + size)
    return torch.randn(n, 3, size, size, generator=g)


def reference(model, x, device="cpu"):
    """The model's FP32 output for x (TF32 off on a GPU), on the CPU."""
    if device != "cpu":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        y = model.to(device)(x.to(device)).float().cpu()
    model.to("cpu")
    return y


def build_models(names, seed, use_torchvision, unet_base, unet_classes, log=print):
    """{name: randomized eval model}; checks the fallback definitions against torchvision's."""
    models = {}
    for name in names:
        model, origin = make_model(name, use_torchvision, unet_base, unet_classes)
        if origin == "torchvision":
            why = same_structure(model, make_model(name, False)[0])
            if why:
                raise SystemExit(f"net_models.py: the fallback {name} differs from torchvision's: "
                                 f"{why}")
        models[name] = randomize(model, seed)
        log(f"{name}: {origin}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M "
            f"parameters")
    return models


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .fvw files (created)")
    ap.add_argument("--case", action="append", type=parse_case, metavar="MODEL:BATCH:SIZE")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--unet-base", type=int, default=None,
                    help="the UNet's first width (default: 16 for the default cases, else 32)")
    ap.add_argument("--unet-classes", type=int, default=4)
    ap.add_argument("--no-torchvision", action="store_true",
                    help="the definitions here even where torchvision exists")
    args = ap.parse_args()
    cases = args.case or [parse_case(c) for c in DEFAULT_CASES]
    base = args.unet_base or (32 if args.case else 16)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    names = list(dict.fromkeys(c[0] for c in cases))
    models = build_models(names, args.seed, not args.no_torchvision, base, args.unet_classes)
    for name in names:
        write_fvw(weights_path(args.out, name), models[name].state_dict().items())
    for name, n, size in cases:
        x = case_input(n, size, args.seed)
        y = reference(models[name], x)
        if not torch.isfinite(y).all():
            raise SystemExit(f"net_models.py: {name} gave a non-finite output")
        path = io_path(args.out, name, n, size)
        write_fvw(path, [("input", x), ("output", y)])
        print(f"wrote {path}: output {tuple(y.shape)}, |y| max {y.abs().max().item():.3g}, "
              f"rms {y.pow(2).mean().sqrt().item():.3g}")
    print(f"torch {torch.__version__}; weights in {os.path.abspath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
