"""The masks of ``flex_attention``: mask_mod helpers, dense masks and :class:`BlockMask`
(see NOTE [ Flex attention, eagerly ] in ``flex_attention.py``)."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np

from ..._core.tensor import Tensor

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


def _ember():
    import ember  # deferred: ember.nn is imported while ember itself initialises

    return ember


# ------------------------------------------------------------------------------------------------
# mask functions


def noop_mask(b, h, q_idx, kv_idx):
    """The mask that keeps every position.

    Args:
        b, h, q_idx, kv_idx (Tensor): batch, head, query and key indices.

    Returns:
        Tensor: a 0-d ``True`` bool tensor.

    Example:
        >>> import ember
        >>> from ember.nn.attention.flex_attention import noop_mask
        >>> i = ember.tensor(0)
        >>> noop_mask(i, i, i, i)
        tensor(True)
    """
    return b.new_ones((), dtype=_ember().bool)


def _check_mods(mask_mods):
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")


def or_masks(*mask_mods):
    """A mask_mod keeping a position when any of ``mask_mods`` keeps it.

    Args:
        *mask_mods (callable): ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor`` functions.

    Returns:
        callable: the union, named ``or_mask``.

    Example:
        >>> import ember
        >>> from ember.nn.attention.flex_attention import create_mask, or_masks
        >>> first = lambda b, h, q, kv: kv == 0
        >>> diag = lambda b, h, q, kv: q == kv
        >>> create_mask(or_masks(first, diag), 1, 1, 3, 3, device="cpu")[0, 0]
        tensor([[ True, False, False],
                [ True,  True, False],
                [ True, False,  True]])
    """
    _check_mods(mask_mods)

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_ember().bool)
        for mod in mask_mods:
            result = result | mod(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """A mask_mod keeping a position when all of ``mask_mods`` keep it.

    Args:
        *mask_mods (callable): ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor`` functions.

    Returns:
        callable: the intersection, named ``and_mask``.

    Example:
        >>> import ember
        >>> from ember.nn.attention.flex_attention import create_mask, and_masks
        >>> causal = lambda b, h, q, kv: q >= kv
        >>> near = lambda b, h, q, kv: q - kv <= 1
        >>> create_mask(and_masks(causal, near), 1, 1, 3, 3, device="cpu")[0, 0]
        tensor([[ True, False, False],
                [ True,  True, False],
                [False,  True,  True]])
    """
    _check_mods(mask_mods)

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_ember().bool)
        for mod in mask_mods:
            result = result & mod(b, h, q_idx, kv_idx)
        return result

    return and_mask


def _n_positional(fn) -> int:
    """How many arguments without defaults ``fn`` takes: 5 for a score_mod, 4 for a mask_mod."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        n = code.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    else:
        n = sum(1 for p in inspect.signature(fn).parameters.values()
                if p.default is inspect.Parameter.empty)
    if n not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {n}")
    return n


def _indices(B, H, L, S):
    """The broadcasting index tensors of NOTE [ Flex attention, eagerly ]."""
    e = _ember()
    return (e.arange(B).view(B, 1, 1, 1), e.arange(H).view(1, H, 1, 1),
            e.arange(L).view(1, 1, L, 1), e.arange(S).view(1, 1, 1, S))


def _dense_mask(mask_mod, B, H, L, S) -> np.ndarray:
    """``mask_mod`` evaluated everywhere: a (B, H, L, S) NumPy bool array."""
    e = _ember()
    with e.no_grad():
        out = mask_mod(*_indices(B, H, L, S))
    arr = out._data if isinstance(out, Tensor) else np.asarray(out)
    return np.broadcast_to(np.asarray(arr, dtype=bool), (B, H, L, S)).copy()


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None) -> Tensor:
    """The dense boolean mask a mask_mod (or score_mod) describes.

    For a ``mask_mod(b, h, q_idx, kv_idx)`` the result is its value at every position; for a
    ``score_mod(score, b, h, q_idx, kv_idx)`` it is where the mod, applied to zero scores,
    does not give ``-inf``.

    Args:
        mod_fn (callable): a mask_mod (4 arguments) or score_mod (5 arguments).
        B (int or None): batch size (None: 1).
        H (int or None): number of heads (None: 1).
        Q_LEN (int): query length.
        KV_LEN (int): key/value length.
        device (ember.device or str, optional): where to create it. Default: CPU.

    Returns:
        Tensor: a bool tensor of shape (B, H, Q_LEN, KV_LEN).

    Example:
        >>> from ember.nn.attention.flex_attention import create_mask
        >>> create_mask(lambda b, h, q, kv: q >= kv, 1, 1, 2, 2, device="cpu")
        tensor([[[[ True, False],
                  [ True,  True]]]])
    """
    e = _ember()
    B = 1 if B is None else B
    H = 1 if H is None else H
    if _n_positional(mod_fn) == 5:
        with e.no_grad():
            out = mod_fn(e.zeros(B, H, Q_LEN, KV_LEN), *_indices(B, H, Q_LEN, KV_LEN))
        mask = ~e.isneginf(e.as_tensor(out)).expand(B, H, Q_LEN, KV_LEN)
        return mask.contiguous() if device is None else mask.contiguous().to(device)
    mask = e.from_numpy(_dense_mask(mod_fn, B, H, Q_LEN, KV_LEN))
    return mask if device is None else mask.to(device)


# ------------------------------------------------------------------------------------------------
# BlockMask


def _dense_to_ordered(dense: np.ndarray):
    """Block table rows as (count, column indices: kept blocks first, in order)."""
    dense = dense.astype(np.int32)
    counts = dense.sum(axis=-1).astype(np.int32)
    order = np.argsort(-dense, axis=-1, kind="stable").astype(np.int32)
    return counts, order


def _ordered_to_dense(counts: np.ndarray, indices: np.ndarray, n_cols: int) -> np.ndarray:
    """The inverse of :func:`_dense_to_ordered`: a 0/1 int32 block table."""
    n_entries = indices.shape[-1]
    valid = np.arange(n_entries) < counts[..., None]
    dense = np.zeros(indices.shape[:-1] + (n_cols + 1,), dtype=np.int32)
    cols = np.where(valid, indices, n_cols)  # invalid entries land in a spare last column
    np.put_along_axis(dense, cols.astype(np.int64), 1, axis=-1)
    return dense[..., :n_cols]


def _np(t):
    return None if t is None else np.asarray(t._data)


def _t(a):
    return None if a is None else _ember().from_numpy(np.array(a, order="C"))


def _transpose_ordered(counts, indices):
    dense = _ordered_to_dense(counts, indices, indices.shape[-1])
    return _dense_to_ordered(np.swapaxes(dense, -2, -1))


def _sliced_mask_mod_error(b, h, q_idx, kv_idx):
    raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")


class BlockMask:
    """A block-sparse description of an attention mask, made by :func:`create_block_mask`.

    The (Q_LEN, KV_LEN) mask is cut into ``BLOCK_SIZE`` tiles; for each row of tiles,
    ``kv_num_blocks``/``kv_indices`` list the partially kept tiles (where ``mask_mod`` must
    be evaluated) and ``full_kv_num_blocks``/``full_kv_indices`` the wholly kept ones;
    ``q_*`` hold the same by columns. All are int32 tensors with leading (B, H) dimensions.
    In ember's computation only ``mask_mod`` matters (see NOTE [ Flex attention, eagerly ]).
    Build one with :func:`create_block_mask` or :meth:`from_kv_blocks` rather than directly.

    Args:
        seq_lengths (tuple of int): (Q_LEN, KV_LEN).
        kv_num_blocks (Tensor): (B, H, Q_BLOCKS) the number of partial tiles in each tile row.
        kv_indices (Tensor): (B, H, Q_BLOCKS, KV_BLOCKS) their column indices, first ones first.
        full_kv_num_blocks, full_kv_indices (Tensor or None): the same for wholly kept tiles.
        q_num_blocks, q_indices (Tensor or None): the partial tiles of each tile column.
        full_q_num_blocks, full_q_indices (Tensor or None): the wholly kept ones by columns.
        BLOCK_SIZE (tuple of int): the (query, key) tile size. Default: (128, 128).
        mask_mod (callable): ``mask_mod(b, h, q_idx, kv_idx) -> bool Tensor``, the mask
            within tiles. Default: keep every position.

    Example:
        >>> from ember.nn.attention.flex_attention import create_block_mask
        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 4, 4, BLOCK_SIZE=2,
        ...                        device="cpu")
        >>> print(bm)  # doctest: +NORMALIZE_WHITESPACE
        BlockMask(shape=(1, 1, 4, 4), sparsity=25.00%,
        (0, 0)
        ██
        ████
        )
        >>> bm.to_dense()
        tensor([[[[1, 0],
                  [1, 1]]]], dtype=ember.int32)
    """

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(128, 128), mask_mod=noop_mask, **_deterministic_backward_metadata):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE,
                       mask_mod=None, seq_lengths=None, compute_q_blocks=True, **_ignored):
        """Build a BlockMask from its key/value block tables, deriving the query ones.

        Args:
            kv_num_blocks (Tensor): (..., Q_BLOCKS) count of partial tiles per tile row.
            kv_indices (Tensor): (..., Q_BLOCKS, KV_BLOCKS) their column indices first.
            full_kv_num_blocks, full_kv_indices (Tensor, optional): the same for full tiles.
            BLOCK_SIZE (int or tuple of int): the tile size.
            mask_mod (callable, optional): the mask within tiles (default: keep all).
            seq_lengths (tuple of int, optional): (Q_LEN, KV_LEN); default: whole tiles.
            compute_q_blocks (bool): also derive the ``q_*`` tables. Default: True.

        Returns:
            BlockMask
        """
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num = q_idx = full_q_num = full_q_idx = None
        if compute_q_blocks:
            q_num, q_idx = map(_t, _transpose_ordered(_np(kv_num_blocks), _np(kv_indices)))
            if full_kv_num_blocks is not None:
                full_q_num, full_q_idx = map(_t, _transpose_ordered(_np(full_kv_num_blocks),
                                                                    _np(full_kv_indices)))
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   q_num, q_idx, full_q_num, full_q_idx, BLOCK_SIZE,
                   mask_mod if mask_mod is not None else noop_mask)

    def as_tuple(self, flatten: bool = True) -> tuple:
        """The tables, block size and mask_mod as one tuple (the form kernels take)."""
        block = self.BLOCK_SIZE if not flatten else tuple(self.BLOCK_SIZE)
        head = (self.seq_lengths[0], self.seq_lengths[1]) if flatten else (self.seq_lengths,)
        return (*head, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices,
                self.full_q_num_blocks, self.full_q_indices,
                *(block if flatten else (block,)), self.mask_mod)

    @property
    def shape(self) -> tuple:
        """``(*batch_dims, Q_LEN, KV_LEN)``: the shape of the mask described."""
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def numel(self) -> int:
        """The number of positions of the mask described (ignoring sparsity)."""
        return math.prod(self.shape)

    def sparsity(self) -> float:
        """The percentage of the mask that lies in skipped (never computed) tiles."""
        computed = int(_np(self.kv_num_blocks).sum())
        if self.full_kv_num_blocks is not None:
            computed += int(_np(self.full_kv_num_blocks).sum())
        dense_ratio = computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel()
        return 100 * (1 - dense_ratio)

    def _dense_np(self) -> np.ndarray:
        dense = _ordered_to_dense(_np(self.kv_num_blocks), _np(self.kv_indices),
                                  self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense(_np(self.full_kv_num_blocks),
                                              _np(self.full_kv_indices),
                                              self.full_kv_indices.shape[-1])
        return dense

    def to_dense(self) -> Tensor:
        """The tile table as a dense int32 tensor (1 where a tile is computed).

        Returns:
            Tensor: shape ``(*batch_dims, Q_BLOCKS, KV_BLOCKS)``.
        """
        return _t(self._dense_np())

    def to_string(self, grid_size=(20, 20), limit: int = 4) -> str:
        """A picture of the tile table: ``██`` computed, ``░░`` partly, blank skipped.

        Args:
            grid_size (int or tuple of int): at most this many rows and columns of cells
                (tiles are merged to fit); -1 shows every tile. Default: (20, 20).
            limit (int): how many (batch, head) pictures at most. Default: 4.

        Returns:
            str
        """
        dense = self._dense_np()
        *batch_dims, n_rows, n_cols = dense.shape
        if isinstance(grid_size, int) and grid_size == -1:
            max_rows, max_cols = n_rows, n_cols
        elif isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size
        row_step = max(1, -(-n_rows // max_rows))
        col_step = max(1, -(-n_cols // max_cols))

        def picture(batch_idx):
            mask = dense[batch_idx]
            lines = [f"{batch_idx}"]
            for r in range(0, n_rows, row_step):
                row = ""
                for c in range(0, n_cols, col_step):
                    frac = mask[r:r + row_step, c:c + col_step].astype(np.float32).mean()
                    row += ("█" if frac == 1 else " " if frac == 0 else "░") * 2
                lines.append(row)
            return "\n".join(lines) + "\n"

        out = []
        for i, batch_idx in enumerate(itertools.product(*[range(n) for n in batch_dims])):
            if i == limit:
                out += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                        "You can also index (BlockMask[batch, head]) to choose a specific "
                        "batch or head"]
                break
            out.append(picture(batch_idx))
        return "\n".join(out)

    def __str__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string().strip()}\n)")

    def __repr__(self) -> str:
        def shape(x):
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return ("BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape(self.q_num_blocks)},\n"
                f"    q_indices={shape(self.q_indices)},\n"
                f"    full_q_num_blocks={shape(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                ")")

    def __getitem__(self, index) -> BlockMask:
        """The block mask of some batches/heads/tile rows (its mask_mod cannot be used).

        Args:
            index: ints, slices or index tensors for the (batch, head, tile row) dims.

        Returns:
            BlockMask
        """
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        # an int keeps its dimension (as a length-1 slice), as PyTorch's slicing does
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = (self.full_kv_num_blocks[index], self.full_kv_indices[index])
        return BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index], *full,
            BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)

    def _adjust(self, new_q_len: int, new_kv_len: int) -> BlockMask:
        """This block mask cropped to its top-left ``new_q_len`` x ``new_kv_len`` corner
        (right for masks such as causal ones, not for every mask_mod).

        Args:
            new_q_len (int): the new query length.
            new_kv_len (int): the new key/value length.

        Returns:
            BlockMask
        """
        rows = -(-new_q_len // self.BLOCK_SIZE[0])
        cols = -(-new_kv_len // self.BLOCK_SIZE[1])

        def crop(num_blocks, indices):
            indices = _np(indices)[..., :rows, :cols]
            num = np.minimum(_np(num_blocks)[..., :rows], cols)
            return _t((indices < num[..., None]).sum(-1).astype(np.int32)), _t(indices)

        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = crop(self.full_kv_num_blocks, self.full_kv_indices)
        return BlockMask.from_kv_blocks(
            *crop(self.kv_num_blocks, self.kv_indices), *full, BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=self.mask_mod, seq_lengths=(new_q_len, new_kv_len),
            compute_q_blocks=self.q_indices is not None)

    def to(self, device) -> BlockMask:
        """This block mask with its tables on ``device``.

        Args:
            device (ember.device or str): the target device.

        Returns:
            BlockMask
        """
        def move(x):
            return x.to(device) if isinstance(x, Tensor) else x

        return BlockMask(self.seq_lengths, *[move(x) for x in (
            self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
            self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
            self.full_q_indices)], BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod)


def _block_tables(mask: np.ndarray, q_block: int, kv_block: int, separate_full: bool):
    """Per-tile counts of kept positions turned into partial/full 0-1 tile tables."""
    B, H, L, S = mask.shape
    Lp, Sp = -(-L // q_block) * q_block, -(-S // kv_block) * kv_block
    padded = np.zeros((B, H, Lp, Sp), dtype=bool)
    padded[..., :L, :S] = mask
    sums = padded.reshape(B, H, Lp // q_block, q_block, Sp // kv_block, kv_block).sum((3, 5))
    if not separate_full:
        return (sums > 0).astype(np.int8), None
    whole = q_block * kv_block
    return ((sums > 0) & (sums < whole)).astype(np.int8), (sums == whole).astype(np.int8)


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      separate_full_blocks: bool = True, compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    """Evaluate ``mask_mod`` everywhere and summarise it as a :class:`BlockMask`.

    Args:
        mask_mod (callable): ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor``, True where a
            query may attend to a key.
        B (int or None): batch size (None: 1, broadcast over any batch).
        H (int or None): number of heads (None: 1, broadcast over any head).
        Q_LEN (int): query length.
        KV_LEN (int): key/value length.
        device (ember.device or str, optional): where the tables live. Default: CPU.
        BLOCK_SIZE (int or tuple of int): tile size. Default: 128.
        separate_full_blocks (bool): list wholly kept tiles separately. Default: True.
        compute_dq_write_order, dq_kv_order: scheduling metadata for fused GPU backward
            kernels; accepted and unused by ember.

    Returns:
        BlockMask

    Example:
        >>> from ember.nn.attention.flex_attention import create_block_mask
        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 256, 256,
        ...                        device="cpu")
        >>> bm.shape, bm.sparsity()
        ((1, 1, 256, 256), 25.0)
    """
    if _n_positional(mask_mod) != 4:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    B = 1 if B is None else B
    H = 1 if H is None else H
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    mask = _dense_mask(mask_mod, B, H, Q_LEN, KV_LEN)
    partial, full = _block_tables(mask, q_block, kv_block, separate_full_blocks)
    counts, indices = _dense_to_ordered(partial)
    full_tables = (None, None) if full is None else tuple(map(_t, _dense_to_ordered(full)))
    bm = BlockMask.from_kv_blocks(_t(counts), _t(indices), *full_tables,
                                  BLOCK_SIZE=(q_block, kv_block), mask_mod=mask_mod,
                                  seq_lengths=(Q_LEN, KV_LEN))
    return bm if device is None else bm.to(device)
