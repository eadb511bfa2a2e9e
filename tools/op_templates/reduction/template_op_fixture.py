def make(torch):
    """template_op(x) = Σ over the last dim of x²: the scaffold's placeholder formula, the same as the op's kernels.
    Written to tests/fixtures/template_op.safetensors by `python3 tools/make_fixtures.py template_op`."""
    out = {}

    def case(case_name, x):
        x.requires_grad_(True)
        y = (x * x).sum(-1)
        gy = torch.randn_like(y)
        (gx,) = torch.autograd.grad(y, x, gy)
        out.update({f"{case_name}.x": x, f"{case_name}.y": y,
                    f"{case_name}.gy": gy, f"{case_name}.gx": gx})

    case("small", torch.randn(3, 4, 5))
    case("wide", torch.linspace(-3, 3, 24).reshape(4, 6))
    return out
