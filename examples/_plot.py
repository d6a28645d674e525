"""Shared by the examples: save a training curve as PNG when matplotlib is installed."""

from __future__ import annotations


def save_loss_curve(values, path, title, ylabel="loss", xlabel="step"):
    """Plot ``values`` (one per step, epoch or episode) to the PNG file ``path``.

    Many points get a moving average drawn on top. Uses the Agg canvas directly (no
    pyplot, so no GUI and no global backend change). Returns ``path``, or None without
    doing anything when ``path`` is empty or matplotlib is not installed.
    """
    if not path:
        return None
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    values = [float(v) for v in values]
    xs = list(range(1, len(values) + 1))
    many = len(values) >= 50
    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(xs, values, lw=1, alpha=0.4 if many else 1.0, label=ylabel)
    if many:
        w = max(2, len(values) // 20)
        avg = [sum(values[i - w:i]) / w for i in range(w, len(values) + 1)]
        ax.plot(xs[w - 1:], avg, lw=2, label=f"moving average of {w}")
        ax.legend()
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    print(f"loss curve saved to {path}")
    return path
