"""A ResNet v1.5 in NumPy float64, written from the definition (not from dpscale's
kernels), to recompute a `dpscale dump` of model.type = resnet: the loss of the
dumped parameters and images, and central differences of it in float64, where a
step of 1e-6 crosses no ReLU or max-pool kink in practice and the rounding of the
differences is far below float32's (the float32 `dpscale gradcheck` has to step by
3e-3, and in a ReLU network of thousands of units that crosses kinks).

NHWC, convolution weights [Cout x k x k x Cin] (the table's rows x cols), batch norm
in training mode over the whole batch (one rank's) or frozen at mean 0, variance 1."""
import numpy as np

EPS_BN = 1e-5


def conv(x, w, k, stride, pad):
    """x [N, H, W, C], w [Cout, k*k*C] -> [N, P, Q, Cout]."""
    n, h, wd, c = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    p, q = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.empty((n, p, q, k, k, c))
    for r in range(k):
        for s in range(k):
            cols[:, :, :, r, s, :] = xp[:, r:r + stride * p:stride, s:s + stride * q:stride, :]
    return cols.reshape(n, p, q, k * k * c) @ w.T


def batchnorm(x, gamma, beta, frozen):
    if frozen:
        mean, var = 0.0, 1.0
    else:
        mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    return (x - mean) / np.sqrt(var + EPS_BN) * gamma + beta


def maxpool(x):
    """3x3, stride 2, pad 1; the padding takes no part."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    p, q = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    out = np.full((n, p, q, c), -np.inf)
    for r in range(3):
        for s in range(3):
            out = np.maximum(out, xp[:, r:r + 2 * p:2, s:s + 2 * q:2, :])
    return out


class ResNet:
    def __init__(self, f):
        cfg = f["config"].attrs
        self.image = int(cfg["model.image_size"])
        self.blocks = [int(b) for b in str(cfg["model.blocks"]).split(",")]
        self.width = int(cfg["model.width"])
        self.classes = int(cfg["model.classes"])
        self.frozen = cfg["model.batchnorm"] == "frozen"
        t = f["model/tensors"][:]
        self.table = {r["name"].decode(): (int(r["offset"]), int(r["rows"]), int(r["cols"])) for r in t}
        self.batch_stats = {}  # batch norm name -> (mean, unbiased variance) of the last loss()

    def running_after_one_step(self, momentum=0.1):
        """The running statistics (from 0 and 1) after the last loss(), concatenated in the
        table's order of the gains, as dpscale dump writes bn_running_mean and _var."""
        names = [n[:-len(".gamma")] for n in self.table if n.endswith(".gamma")]
        mean = np.concatenate([momentum * self.batch_stats[n][0] for n in names])
        var = np.concatenate([(1 - momentum) + momentum * self.batch_stats[n][1] for n in names])
        return mean, var

    def tensor(self, params, name):
        off, rows, cols = self.table[name]
        v = params[off:off + rows * cols]
        return v.reshape(rows, cols) if rows > 1 else v

    def bn(self, params, x, name, relu):
        if not self.frozen:  # this batch's statistics, for the running ones: mean, unbiased variance
            n = x.shape[0] * x.shape[1] * x.shape[2]
            self.batch_stats[name] = (x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2)) * n / (n - 1))
        y = batchnorm(x, self.tensor(params, name + ".gamma"), self.tensor(params, name + ".beta"), self.frozen)
        return np.maximum(y, 0.0) if relu else y

    def loss(self, params, images, labels):
        """The mean softmax cross-entropy of the batch, in float64."""
        params = params.astype(np.float64)
        n = len(labels)
        x = images.astype(np.float64).reshape(n, self.image, self.image, 3)
        x = conv(x, self.tensor(params, "conv1.weight"), 7, 2, 3)
        x = maxpool(self.bn(params, x, "bn1", True))
        for s, count in enumerate(self.blocks):
            for b in range(count):
                pre, stride = f"layer{s + 1}.{b}.", 2 if s > 0 and b == 0 else 1
                y = self.bn(params, conv(x, self.tensor(params, pre + "conv1.weight"), 1, 1, 0), pre + "bn1", True)
                y = self.bn(params, conv(y, self.tensor(params, pre + "conv2.weight"), 3, stride, 1), pre + "bn2", True)
                y = self.bn(params, conv(y, self.tensor(params, pre + "conv3.weight"), 1, 1, 0), pre + "bn3", False)
                if b == 0:
                    x = self.bn(params, conv(x, self.tensor(params, pre + "downsample.conv.weight"), 1, stride, 0),
                                pre + "downsample.bn", False)
                x = np.maximum(y + x, 0.0)
        feat = x.mean(axis=(1, 2))
        logits = feat @ self.tensor(params, "fc.weight").T + self.tensor(params, "fc.bias")
        logits -= logits.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        return -logp[np.arange(n), labels].mean()
