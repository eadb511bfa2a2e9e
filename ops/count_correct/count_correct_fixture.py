def make(torch):
    """count_correct(logits, labels) = (logits.argmax(1) == labels).sum(), as f64: a batch of
    random logits, and whole-number logits with many ties (argmax: the first of equal maxima)."""
    out = {}

    def case(case_name, logits, labels):
        y = (logits.argmax(1) == labels).sum().to(torch.float64)
        out.update({f"{case_name}.logits": logits, f"{case_name}.labels": labels,
                    f"{case_name}.y": y})

    case("batch", torch.randn(64, 10), torch.randint(0, 10, (64,)))
    case("ties", torch.randint(0, 3, (48, 5)).float(), torch.randint(0, 5, (48,)))
    return out
