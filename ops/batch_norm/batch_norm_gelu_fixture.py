"""batch_norm_gelu: gelu(batch_norm(x)) with PyTorch's exact (erf) GELU, airbench94's pair; train/
eval, affine/non-affine, 2-D and 4-D input, with the running stats after the update. The
"airbench" case has airbench94's BatchNorm (momentum 0.4, eps 1e-12, weight 1)."""
CASES = {  # name: (shape, training, affine, momentum, eps)
    "train4d": ((4, 3, 5, 5), True, True, 0.1, 1e-5),
    "train2d": ((8, 4), True, True, 0.1, 1e-5),
    "train_noaffine": ((4, 3, 2, 3), True, False, 0.3, 1e-5),
    "eval4d": ((4, 3, 5, 5), False, True, 0.1, 1e-5),
    "airbench": ((6, 4, 3, 3), True, True, 0.4, 1e-12),
}


def make(torch):
    out = {}
    for name, (shape, training, affine, momentum, eps) in CASES.items():
        c = shape[1]
        x = (torch.randn(*shape) * 2 + 0.5).requires_grad_(True)
        rm = torch.randn(c)
        rv = torch.rand(c) + 0.5
        out[f"{name}.running_mean_in"] = rm.clone()
        out[f"{name}.running_var_in"] = rv.clone()
        w = (torch.rand(c) + 0.5).requires_grad_(True) if affine else None
        b = torch.randn(c).requires_grad_(True) if affine else None
        y = torch.nn.functional.gelu(
            torch.nn.functional.batch_norm(x, rm, rv, w, b, training, momentum, eps))
        gy = torch.randn_like(y)
        inputs = (x, w, b) if affine else (x,)
        grads = torch.autograd.grad(y, inputs, gy)
        out.update({f"{name}.x": x, f"{name}.y": y, f"{name}.gy": gy, f"{name}.gx": grads[0],
                    f"{name}.running_mean": rm, f"{name}.running_var": rv})
        if affine:
            out.update({f"{name}.w": w, f"{name}.b": b, f"{name}.gw": grads[1],
                        f"{name}.gb": grads[2]})
    return out
