"""``torch.quasirandom``: low-discrepancy (Sobol) sequences.

NOTE [ Sobol points as PyTorch draws them ]
A Sobol point is the XOR of some of the dimension's 30 *direction numbers*: point ``k`` XORs
the direction numbers picked by the bits of the Gray code ``k ^ (k >> 1)``, then divides by
``2**30``. The direction numbers are the Joe & Kuo (2008) "new-joe-kuo-6.21201" table, built
up to 30 bits by the Bratley & Fox recurrence. SciPy ships the Joe & Kuo table (for
``stats.qmc.Sobol``, whose 30-bit direction numbers equal PyTorch's for all 21201
dimensions), so we read the table from SciPy's data file rather than carry a second copy,
and run the recurrence ourselves. Because consecutive Gray codes differ in one bit,
PyTorch walks the sequence by XOR-ing one direction number per step into the running state
``quasi``; we compute a whole batch at once from the Gray codes of the batch's indices,
starting from the current ``quasi``, which gives the same integers.

Scrambling (Owen-style linear matrix scrambling plus a digital shift, as PyTorch does it)
multiplies every direction number by a random lower-triangular bit matrix over GF(2) and
XORs a random shift into the starting point. PyTorch draws those bits with ``torch.randint``
from a Mersenne-Twister generator seeded with ``seed``; NumPy's legacy ``RandomState`` is the
same Mersenne Twister with the same seeding, so with a ``seed`` our scrambled points equal
PyTorch's too.
"""

from __future__ import annotations

import importlib.util
import os
import secrets

import numpy as np

import ember

__all__ = ["SobolEngine"]

_MAXBIT = 30
_MAXDIM = 21201


def _direction_numbers(dimension: int) -> np.ndarray:
    """The (dimension, 30) int64 table of direction numbers (NOTE [ Sobol points ... ])."""
    poly, vinit = _joe_kuo_table()
    poly, vinit = poly[:dimension], vinit[:dimension]
    degree = np.array([int(p).bit_length() - 1 for p in poly], dtype=np.int64)
    degree[0] = 0  # the first dimension is van der Corput's sequence: all ones
    v = np.zeros((dimension, _MAXBIT), dtype=np.int64)
    cols = np.arange(vinit.shape[1])
    v[:, : vinit.shape[1]] = np.where(cols < degree[:, None], vinit, 0)
    v[0] = 1
    rows = np.arange(dimension)
    # Bratley & Fox: v[j] = v[j-m] ^ (v[j-m] << m) ^ XOR_k a_k (v[j-k] << k) over the
    # polynomial's inner coefficients a_k (the bits of ``poly``), all dimensions at once
    for j in range(_MAXBIT):
        todo = (rows > 0) & (degree <= j)
        if not todo.any():
            continue
        r, m, p = rows[todo], degree[todo], poly[todo]
        new = v[r, j - m]
        for k in range(int(m.max())):
            use = (k < m) & (((p >> np.maximum(m - 1 - k, 0)) & 1) == 1)
            new = np.where(use, new ^ (v[r, np.maximum(j - k - 1, 0)] << (k + 1)), new)
        v[r, j] = new
    return v << np.arange(_MAXBIT - 1, -1, -1)


def _joe_kuo_table():
    """The primitive polynomials and initial direction numbers of the Joe & Kuo table, read
    from the copy SciPy ships (without importing scipy.stats, which is slow to import)."""
    global _TABLE
    if _TABLE is None:
        spec = importlib.util.find_spec("scipy.stats")
        path = os.path.join(spec.submodule_search_locations[0], "_sobol_direction_numbers.npz")
        with np.load(path) as data:
            _TABLE = (data["poly"].astype(np.int64), data["vinit"].astype(np.int64))
    return _TABLE


_TABLE = None


def _gray(k: np.ndarray) -> np.ndarray:
    return k ^ (k >> 1)


def _xor_directions(quasi: np.ndarray, flips: np.ndarray, sobolstate) -> np.ndarray:
    """Row i: ``quasi`` XOR the direction numbers picked by the bits of ``flips[i]``."""
    state = sobolstate.numpy()
    points = np.broadcast_to(quasi, (len(flips), state.shape[0])).copy()
    for bit in range(_MAXBIT):
        picked = ((flips >> bit) & 1).astype(bool)
        if picked.any():
            points[picked] ^= state[:, bit]
    return points


def _mt_bits(seed: int, shape) -> np.ndarray:
    """``torch.randint(2, shape, generator=torch.Generator().manual_seed(seed))``.

    PyTorch's CPU generator is MT19937 seeded with the low 32 bits of the seed, and
    ``randint(2)`` takes each raw 32-bit output modulo 2, in row-major order.
    """
    raw = np.random.RandomState(seed & 0xFFFFFFFF)._bit_generator.random_raw(int(np.prod(shape)))
    return (raw & 1).astype(np.int64).reshape(shape)


class SobolEngine:
    """A generator of Sobol low-discrepancy points in the unit cube ``[0, 1)^dimension``.

    Points depend on the ones drawn before: the engine walks one sequence, which
    :meth:`reset` restarts and :meth:`fast_forward` skips along. Unscrambled points (and
    scrambled ones with a ``seed``) are exactly PyTorch's.

    Args:
        dimension (int): the dimension of the points, from 1 to 21201.
        scramble (bool): whether to scramble the sequence (random linear matrix scrambling
            and digital shift). Default: False.
        seed (int, optional): the seed of the scrambling; a fresh random one if None.

    Attributes:
        sobolstate (Tensor): the (dimension, 30) int64 direction numbers (scrambled if asked).
        shift (Tensor): the (dimension,) int64 digital shift (zeros without scrambling).
        quasi (Tensor): the (dimension,) int64 state: the integer form of the last point.
        num_generated (int): how many points have been drawn or skipped.

    Example::

        >>> engine = ember.quasirandom.SobolEngine(dimension=2)
        >>> engine.draw(4)
        tensor([[0.0000, 0.0000],
                [0.5000, 0.5000],
                [0.7500, 0.2500],
                [0.2500, 0.7500]])
    """

    MAXBIT = _MAXBIT
    MAXDIM = _MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(
                f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        state = _direction_numbers(int(dimension))
        shift = np.zeros(int(dimension), dtype=np.int64)
        if scramble:
            state, shift = self._scrambled(state)
        self.sobolstate = ember.from_numpy(state)
        self.shift = ember.from_numpy(shift)
        self.quasi = self.shift.clone()
        # The first point is the shift itself, divided in the default dtype of the moment
        # (as PyTorch's ``quasi / 2**MAXBIT`` does), whatever dtype draw() later asks for.
        self._first_point = (self.quasi / 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _scrambled(self, state):
        if self.seed is None:
            seed = secrets.randbits(63)
        else:
            # Same check (and error) as seeding a generator with it.
            ember.Generator().manual_seed(self.seed)
            seed = int(self.seed)
        d = state.shape[0]
        shift_bits = _mt_bits(seed, (d, _MAXBIT + _MAXBIT * _MAXBIT))
        # torch draws the shift bits first, then the (d, 30, 30) matrices, from one stream.
        shift_bits, ltm = shift_bits.ravel()[: d * _MAXBIT], shift_bits.ravel()[d * _MAXBIT:]
        shift = shift_bits.reshape(d, _MAXBIT) @ (np.int64(1) << np.arange(_MAXBIT))
        ltm = np.tril(ltm.reshape(d, _MAXBIT, _MAXBIT))
        ltm[:, np.arange(_MAXBIT), np.arange(_MAXBIT)] = 1
        # Row p of a matrix, read as an integer with column 0 as its top bit, is ANDed with
        # each direction number; the parity of that AND is bit (29 - p) of the new number.
        # Over GF(2) that is a product of bit matrices: bits[d, j, k] is bit (29 - k) of
        # state[d, j], so parity[d, j, p] = sum_k bits[d, j, k] * ltm[d, p, k] mod 2.
        powers = np.int64(1) << np.arange(_MAXBIT - 1, -1, -1)
        bits = (state[:, :, None] >> np.arange(_MAXBIT - 1, -1, -1)) & 1
        parity = np.matmul(bits, ltm.transpose(0, 2, 1)) & 1
        return parity @ powers, shift

    def _advance(self, start: int, n: int) -> np.ndarray:
        """The integer points ``start+1 .. start+n``, from ``quasi`` holding point ``start``."""
        steps = np.arange(start + 1, start + n + 1, dtype=np.int64)
        flips = _gray(steps) ^ _gray(np.int64(start))
        return _xor_directions(self.quasi.numpy(), flips, self.sobolstate)

    def _draw(self, start: int, n: int, dtype) -> ember.Tensor:
        if n < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {n}: [{n}, {self.dimension}]")
        if dtype not in (ember.float32, ember.float64):
            raise NotImplementedError(
                f"\"_sobol_engine_draw\" not implemented for '{dtype.scalar_name}'")
        points = self._advance(start, n)
        if n:
            self.quasi = ember.from_numpy(points[-1].copy())
        return ember.from_numpy(points).to(dtype).mul_(1.0 / 2**_MAXBIT)

    def draw(self, n: int = 1, out: ember.Tensor | None = None, dtype=None) -> ember.Tensor:
        """Draw the next ``n`` points of the sequence.

        Args:
            n (int): how many points. Default: 1.
            out (Tensor, optional): a tensor to resize and fill with the points.
            dtype (ember.dtype, optional): float32 or float64; the default dtype if None.

        Returns:
            Tensor: the points, of shape ``(n, dimension)``.

        Example::

            >>> engine = ember.quasirandom.SobolEngine(3)
            >>> engine.draw(2, dtype=ember.float64)
            tensor([[0.0000, 0.0000, 0.0000],
                    [0.5000, 0.5000, 0.5000]], dtype=ember.float64)
        """
        if dtype is None:
            dtype = ember.get_default_dtype()
        if self.num_generated == 0:
            first = self._first_point.to(dtype)
            if n == 1:
                result = first
            else:
                result = ember.cat((first, self._draw(0, n - 1, dtype)), dim=-2)
        else:
            result = self._draw(self.num_generated - 1, n, dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: ember.Tensor | None = None, dtype=None) -> ember.Tensor:
        """Draw the next ``2**m`` points, keeping the total drawn a power of two.

        Sobol points are evenly spread only in blocks of a power of two points, so this
        refuses to leave the total at anything else.

        Args:
            m (int): the base-2 exponent of the number of points.
            out (Tensor, optional): a tensor to resize and fill with the points.
            dtype (ember.dtype, optional): float32 or float64; the default dtype if None.

        Returns:
            Tensor: the points, of shape ``(2**m, dimension)``.

        Raises:
            ValueError: if the points drawn so far plus ``2**m`` is not a power of two.

        Example::

            >>> ember.quasirandom.SobolEngine(1).draw_base2(2).flatten()
            tensor([0.0000, 0.5000, 0.7500, 0.2500])
        """
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, "
                "please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Go back to the start of the sequence; returns ``self``.

        Example::

            >>> engine = ember.quasirandom.SobolEngine(2)
            >>> a = engine.draw(3)
            >>> bool((engine.reset().draw(3) == a).all())
            True
        """
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip the next ``n`` points, as drawing them would; returns ``self``.

        Args:
            n (int): how many points to skip.

        Example::

            >>> engine = ember.quasirandom.SobolEngine(2).fast_forward(2)
            >>> engine.draw(1)
            tensor([[0.7500, 0.2500]])
        """
        start = self.num_generated - 1 if self.num_generated else 0
        steps = n if self.num_generated else n - 1
        if steps > 0:
            # Only the last point matters: XOR in the Gray-code difference at once.
            flips = _gray(np.int64(start + steps)) ^ _gray(np.int64(start))
            point = _xor_directions(self.quasi.numpy()[None], flips[None], self.sobolstate)
            self.quasi.copy_(ember.from_numpy(point[0]))
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
