# torch_rows.py THREADS [KERNEL...] - PyTorch's CPU kernels on the shapes of kb_rows.c
# (best of 7 rounds of 5 calls), for run.sh; needs torch (not a test dependency).
# The row kernels allocate their output on every call, as F.* do for a user
# (no out= form); the activations write into a preallocated out=.
import sys, time, torch, torch.nn.functional as F
th = int(sys.argv[1]); torch.set_num_threads(th)
torch.manual_seed(1)
def best(f, reps):
    f(); b = 1e9
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(reps): f()
        b = min(b, (time.perf_counter() - t) / reps)
    return b
R, C = 4096, 1024
x = (torch.rand(R, C) - 0.5) * 8; y = torch.empty_like(x)
w = torch.ones(C); b = torch.zeros(C)
n = 16 << 20; v = (torch.rand(n) - 0.5) * 8; vo = torch.empty_like(v)
lg = torch.randn(64, 32000); tg = torch.randint(0, 32000, (64,))
# The cross-entropy's backward as autograd runs it after F.cross_entropy
# (mean): nll_loss_backward, then the log-softmax backward on the saved
# log-probabilities (made once, not timed).
lsm = torch.log_softmax(lg, 1); g1 = torch.tensor(1.0); tw = torch.tensor(64.0)
def ce_backward():
    gn = torch.ops.aten.nll_loss_backward(g1, lsm, tg, None, 1, -100, tw)
    return torch.ops.aten._log_softmax_backward_data(gn, lsm, 1, torch.float32)
# rope as transformers' apply_rotary_pos_emb does it: cos / sin tables for
# the positions made once (not timed), then x cos + rotate_half(x) sin.
hd = 128; xs = x.view(R, C // hd, hd); pos = torch.arange(R) % C
ang = pos[:, None].double() * (10000.0 ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd))[None, :]
emb = torch.cat((ang, ang), -1); rc = emb.cos().float()[:, None, :]; rsn = emb.sin().float()[:, None, :]
def rope():
    return xs * rc + torch.cat((-xs[..., hd // 2:], xs[..., : hd // 2]), -1) * rsn
cases = {
 "softmax": (lambda: torch._softmax(x, 1, False), 8*R*C),
 "log_softmax": (lambda: torch._log_softmax(x, 1, False), 8*R*C),
 "layernorm": (lambda: F.layer_norm(x, (C,), w, b, 1e-5), 8*R*C),
 "rmsnorm": (lambda: F.rms_norm(x, (C,), w, 1e-5), 8*R*C),
 "gelu": (lambda: torch._C._nn.gelu(v, out=vo), 8*n),
 "gelu_tanh": (lambda: torch._C._nn.gelu(v, approximate="tanh", out=vo), 8*n),
 "silu": (lambda: torch._C._nn.silu(v, out=vo), 8*n),
 "ce": (lambda: F.cross_entropy(lg, tg), 4*64*32000),
 "ce_backward": (ce_backward, 8*64*32000),
 "rope": (rope, 8*R*C),
}
for k in sys.argv[2:] or cases:
    f, bytes_ = cases[k]
    t = best(f, 5)
    print("torch %s th%d: %.3f ms, %.2f GB/s" % (k, th, t*1e3, bytes_/t/1e9))
