"""One doctest example per registered op and in-place form (NOTE [ Generated docstrings ]
in ember/_ops/_docs.py). Written by ``python docs/_gen.py --examples``, which runs every
example and records its output and result type; edit the ``>>>`` lines and rerun it.

name -> (result type, doctest text). Names are ``ember.<name>`` functions, or
``Tensor.<name>`` for methods and in-place forms.
"""

# ruff: noqa: E501  (recorded outputs are as long as ember prints them)
# fmt: off
EXAMPLES = {
    'Tensor.H': ('Tensor', """
>>> x = ember.tensor([[1 + 1j, 2 + 0j], [0 + 0j, 3 - 2j]])
>>> x.H
tensor([[1.-1.j, 0.-0.j],
        [2.-0.j, 3.+2.j]])
"""),
    'Tensor.T': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x.T
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    'Tensor.abs_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.abs_()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.acos_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.acos_()
tensor([1.3181, 1.0472, 0.7227])
"""),
    'Tensor.acosh_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> x.acosh_()
tensor([0.0000, 1.3170, 1.7627])
"""),
    'Tensor.add_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.add_(y)
tensor([1.2500, 2.5000, 3.7500])
"""),
    'Tensor.addbmm_': ('Tensor', """
>>> x = ember.zeros(2, 2)
>>> b1 = ember.ones(3, 2, 4)
>>> b2 = ember.ones(3, 4, 2)
>>> x.addbmm_(b1, b2)
tensor([[12., 12.],
        [12., 12.]])
"""),
    'Tensor.addcdiv_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> tensor1 = ember.tensor([1.0, 2.0, 3.0])
>>> tensor2 = ember.tensor([0.5, 0.5, 0.5])
>>> x.addcdiv_(tensor1, tensor2)
tensor([2.2500, 4.5000, 6.7500])
"""),
    'Tensor.addcmul_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> tensor1 = ember.tensor([1.0, 2.0, 3.0])
>>> tensor2 = ember.tensor([0.5, 0.5, 0.5])
>>> x.addcmul_(tensor1, tensor2)
tensor([0.7500, 1.5000, 2.2500])
"""),
    'Tensor.addmm_': ('Tensor', """
>>> x = ember.ones(2, 2)
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> x.addmm_(a, a, beta=0.5)
tensor([[ 7.5000, 10.5000],
        [15.5000, 22.5000]])
"""),
    'Tensor.addmv_': ('Tensor', """
>>> x = ember.tensor([1.0, 1.0])
>>> m = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> v = ember.tensor([1.0, -1.0])
>>> x.addmv_(m, v)
tensor([0., 0.])
"""),
    'Tensor.addr_': ('Tensor', """
>>> x = ember.zeros(2, 3)
>>> x.addr_(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0, -1.0]))
tensor([[ 1.,  0., -1.],
        [ 2.,  0., -2.]])
"""),
    'Tensor.as_strided_': ('Tensor', """
>>> x = ember.arange(6.0)
>>> x.as_strided_((2, 2), (1, 2))
tensor([[0., 2.],
        [1., 3.]])
"""),
    'Tensor.as_subclass': ('Tensor', """
>>> class MyTensor(ember.Tensor):
...     pass
>>> y = ember.tensor([1.0, 2.0]).as_subclass(MyTensor)
>>> type(y).__name__
'MyTensor'
"""),
    'Tensor.asin_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.asin_()
tensor([0.2527, 0.5236, 0.8481])
"""),
    'Tensor.asinh_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.asinh_()
tensor([0.2475, 0.4812, 0.6931])
"""),
    'Tensor.atan2_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.atan2_(y)
tensor([0.2450, 0.2450, 0.2450])
"""),
    'Tensor.atan_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.atan_()
tensor([0.2450, 0.4636, 0.6435])
"""),
    'Tensor.atanh_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.atanh_()
tensor([0.2554, 0.5493, 0.9730])
"""),
    'Tensor.backward': ('None', """
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""),
    'Tensor.baddbmm_': ('Tensor', """
>>> x = ember.zeros(2, 2, 2)
>>> b = ember.ones(2, 2, 3)
>>> x.baddbmm_(b, b.mT, alpha=0.5)
tensor([[[1.5000, 1.5000],
         [1.5000, 1.5000]],
<BLANKLINE>
        [[1.5000, 1.5000],
         [1.5000, 1.5000]]])
"""),
    'Tensor.bernoulli_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.bernoulli_().shape
ember.Size([3])
"""),
    'Tensor.bfloat16': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.bfloat16()
tensor([0.2500, 0.5000, 0.7500], dtype=ember.bfloat16)
"""),
    'Tensor.bitwise_and_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.bitwise_and_(y)
tensor([4, 4, 1])
"""),
    'Tensor.bitwise_left_shift_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.bitwise_left_shift_(y)
tensor([ 96, 256,  72])
"""),
    'Tensor.bitwise_not_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> x.bitwise_not_()
tensor([ -7,  -5, -10])
"""),
    'Tensor.bitwise_or_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.bitwise_or_(y)
tensor([ 6,  6, 11])
"""),
    'Tensor.bitwise_right_shift_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.bitwise_right_shift_(y)
tensor([0, 0, 1])
"""),
    'Tensor.bitwise_xor_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.bitwise_xor_(y)
tensor([ 2,  2, 10])
"""),
    'Tensor.bool': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.bool()
tensor([True, True, True])
"""),
    'Tensor.byte': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.byte()
tensor([0, 0, 0], dtype=ember.uint8)
"""),
    'Tensor.cauchy_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cauchy_().shape
ember.Size([3])
"""),
    'Tensor.cdouble': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cdouble()
tensor([0.2500+0.j, 0.5000+0.j, 0.7500+0.j], dtype=ember.complex128)
"""),
    'Tensor.ceil_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.ceil_()
tensor([1., 1., 1.])
"""),
    'Tensor.cfloat': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cfloat()
tensor([0.2500+0.j, 0.5000+0.j, 0.7500+0.j])
"""),
    'Tensor.char': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.char()
tensor([0, 0, 0], dtype=ember.int8)
"""),
    'Tensor.clamp_': ('Tensor', """
>>> x = ember.tensor([-1.0, 0.5, 2.0])
>>> x.clamp_(min=0.0, max=1.0)
tensor([0.0000, 0.5000, 1.0000])
"""),
    'Tensor.clamp_max_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.clamp_max_(2.5)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.clamp_min_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.clamp_min_(0.5)
tensor([0.5000, 0.5000, 0.7500])
"""),
    'Tensor.clip_': ('Tensor', """
>>> x = ember.tensor([-1.0, 0.5, 2.0])
>>> x.clip_(0.0, 1.0)
tensor([0.0000, 0.5000, 1.0000])
"""),
    'Tensor.conj_physical_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.conj_physical_()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.const_data_ptr': ('bool', """
>>> x = ember.tensor([1.0, 2.0])
>>> x.const_data_ptr() == x.data_ptr()
True
"""),
    'Tensor.contiguous': ('tuple', """
>>> x = ember.zeros(2, 3).t()
>>> x.is_contiguous(), x.contiguous().is_contiguous()
(False, True)
"""),
    'Tensor.copy_': ('Tensor', """
>>> x = ember.zeros(3)
>>> x.copy_(ember.tensor([1, 2, 3]))
tensor([1., 2., 3.])
"""),
    'Tensor.copysign_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.copysign_(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.cos_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cos_()
tensor([0.9689, 0.8776, 0.7317])
"""),
    'Tensor.cosh_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cosh_()
tensor([1.0314, 1.1276, 1.2947])
"""),
    'Tensor.cpu': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.cpu()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.cuda': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0])
>>> y = x.cuda() if ember.cuda.is_available() else x
>>> y.sum().item()
3.0
"""),
    'Tensor.cumprod_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> x.cumprod_(0)
tensor([1., 2., 6.])
"""),
    'Tensor.cumsum_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> x.cumsum_(0)
tensor([1., 3., 6.])
"""),
    'Tensor.data': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.data
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.data_ptr': ('bool', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> x.data_ptr() == x[:2].data_ptr()
True
>>> x[1:].data_ptr() - x.data_ptr()
4
"""),
    'Tensor.deg2rad_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.deg2rad_()
tensor([0.0044, 0.0087, 0.0131])
"""),
    'Tensor.detach': ('Tensor', """
>>> x = ember.ones(2, requires_grad=True)
>>> y = (x * 2).detach()
>>> y.requires_grad, y
(False, tensor([2., 2.]))
"""),
    'Tensor.detach_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.detach_()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.digamma_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.digamma_()
tensor([-4.2275, -1.9635, -1.0859])
"""),
    'Tensor.dim': ('int', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.dim()
1
"""),
    'Tensor.div_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.div_(y)
tensor([0.2500, 0.2500, 0.2500])
"""),
    'Tensor.divide_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.divide_(y)
tensor([0.2500, 0.2500, 0.2500])
"""),
    'Tensor.double': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.double()
tensor([0.2500, 0.5000, 0.7500], dtype=ember.float64)
"""),
    'Tensor.element_size': ('int', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.element_size()
4
"""),
    'Tensor.eq_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.eq_(y)
tensor([0., 0., 0.])
"""),
    'Tensor.erf_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.erf_()
tensor([0.2763, 0.5205, 0.7112])
"""),
    'Tensor.erfc_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.erfc_()
tensor([0.7237, 0.4795, 0.2888])
"""),
    'Tensor.erfinv_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.erfinv_()
tensor([0.2253, 0.4769, 0.8134])
"""),
    'Tensor.exp2_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.exp2_()
tensor([1.1892, 1.4142, 1.6818])
"""),
    'Tensor.exp_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.exp_()
tensor([1.2840, 1.6487, 2.1170])
"""),
    'Tensor.broadcast_to': ('Tensor', """
>>> ember.tensor([1, 2, 3]).broadcast_to(2, 3)
tensor([[1, 2, 3],
        [1, 2, 3]])
"""),
    'Tensor.expand': ('Tensor', """
>>> x = ember.tensor([[1], [2]])
>>> x.expand(2, 3)
tensor([[1, 1, 1],
        [2, 2, 2]])
>>> x.expand(-1, 4).shape
ember.Size([2, 4])
"""),
    'Tensor.expand_as': ('Tensor', """
>>> x = ember.tensor([[1], [2]])
>>> x.expand_as(ember.zeros(2, 3))
tensor([[1, 1, 1],
        [2, 2, 2]])
"""),
    'Tensor.expm1_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.expm1_()
tensor([0.2840, 0.6487, 1.1170])
"""),
    'Tensor.exponential_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.exponential_().shape
ember.Size([3])
"""),
    'Tensor.flip': ('Tensor', """
>>> ember.tensor([[1, 2], [3, 4]]).flip(0, 1)
tensor([[4, 3],
        [2, 1]])
"""),
    'Tensor.float': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.float()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.float_power_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
>>> x.float_power_(2)
tensor([1., 4., 9.], dtype=ember.float64)
"""),
    'Tensor.floor_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.floor_()
tensor([0., 0., 0.])
"""),
    'Tensor.floor_divide_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.floor_divide_(y)
tensor([0., 0., 0.])
"""),
    'Tensor.fmod_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.fmod_(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.frac_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.frac_()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.gcd_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.gcd_(y)
tensor([2, 2, 3])
"""),
    'Tensor.ge_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.ge_(y)
tensor([0., 0., 0.])
"""),
    'Tensor.geometric_': ('Tensor', """
>>> x = ember.empty(4)
>>> x.geometric_(0.5).shape
ember.Size([4])
"""),
    'Tensor.get_device': ('int', """
>>> ember.zeros(1).get_device()
-1
"""),
    'Tensor.gt_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.gt_(y)
tensor([0., 0., 0.])
"""),
    'Tensor.half': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.half()
tensor([0.2500, 0.5000, 0.7500], dtype=ember.float16)
"""),
    'Tensor.heaviside_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> values = ember.tensor([1.0, 2.0, 3.0])
>>> x.heaviside_(values)
tensor([1., 1., 1.])
"""),
    'Tensor.hypot_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.hypot_(y)
tensor([1.0308, 2.0616, 3.0923])
"""),
    'Tensor.i0_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.i0_()
tensor([1.0157, 1.0635, 1.1456])
"""),
    'Tensor.igamma_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.igamma_(y)
tensor([0.9321, 0.9545, 0.9710])
"""),
    'Tensor.igammac_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.igammac_(y)
tensor([0.0679, 0.0455, 0.0290])
"""),
    'Tensor.imag': ('Tensor', """
>>> x = ember.tensor([1 + 2j, 3 - 1j])
>>> x.imag
tensor([ 2., -1.])
"""),
    'Tensor.index_add_': ('Tensor', """
>>> x = ember.zeros(3, 2)
>>> x.index_add_(0, ember.tensor([0, 2, 0]), ember.ones(3, 2))
tensor([[2., 2.],
        [0., 0.],
        [1., 1.]])
"""),
    'Tensor.index_copy_': ('Tensor', """
>>> x = ember.zeros(3, 2)
>>> x.index_copy_(0, ember.tensor([2, 0]), ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
tensor([[3., 4.],
        [0., 0.],
        [1., 2.]])
"""),
    'Tensor.index_fill_': ('Tensor', """
>>> x = ember.zeros(2, 3)
>>> x.index_fill_(1, ember.tensor([0, 2]), -1.0)
tensor([[-1.,  0., -1.],
        [-1.,  0., -1.]])
"""),
    'Tensor.index_put_': ('Tensor', """
>>> x = ember.zeros(3)
>>> x.index_put_((ember.tensor([0, 2]),), ember.tensor([5.0, 7.0]))
tensor([5., 0., 7.])
"""),
    'Tensor.index_reduce_': ('Tensor', """
>>> x = ember.ones(3)
>>> x.index_reduce_(0, ember.tensor([0, 0, 2]), ember.tensor([2.0, 3.0, 4.0]), 'prod')
tensor([6., 1., 4.])
"""),
    'Tensor.int': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.int()
tensor([0, 0, 0], dtype=ember.int32)
"""),
    'Tensor.ipu': ('Tensor', """
>>> x = ember.tensor([1.0])
>>> try:
...     x.ipu()
... except RuntimeError:
...     print('no IPU')
no IPU
"""),
    'Tensor.is_complex': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_complex()
False
"""),
    'Tensor.is_contiguous': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_contiguous()
True
"""),
    'Tensor.is_distributed': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_distributed()
False
"""),
    'Tensor.is_floating_point': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_floating_point()
True
"""),
    'Tensor.is_ipu': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_ipu
False
"""),
    'Tensor.is_maia': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_maia
False
"""),
    'Tensor.is_mkldnn': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_mkldnn
False
"""),
    'Tensor.is_mps': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_mps
False
"""),
    'Tensor.is_mtia': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_mtia
False
"""),
    'Tensor.is_nested': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_nested
False
"""),
    'Tensor.is_pinned': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_pinned()
False
"""),
    'Tensor.is_shared': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_shared()
False
"""),
    'Tensor.is_signed': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_signed()
True
"""),
    'Tensor.is_sparse_csr': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_sparse_csr
False
"""),
    'Tensor.is_vulkan': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_vulkan
False
"""),
    'Tensor.is_xla': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_xla
False
"""),
    'Tensor.is_xpu': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.is_xpu
False
"""),
    'Tensor.item': ('float', """
>>> ember.tensor([2.5]).item()
2.5
>>> ember.tensor(7).item()
7
"""),
    'Tensor.lcm_': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> x.lcm_(y)
tensor([12, 12,  9])
"""),
    'Tensor.ldexp_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.ldexp_(y)
tensor([0.5000, 2.0000, 6.0000])
"""),
    'Tensor.le_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.le_(y)
tensor([1., 1., 1.])
"""),
    'Tensor.lerp_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> end = ember.tensor([1.0, 2.0, 3.0])
>>> weight = ember.tensor([0.5, 0.5, 0.5])
>>> x.lerp_(end, weight)
tensor([0.6250, 1.2500, 1.8750])
"""),
    'Tensor.lgamma_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.lgamma_()
tensor([1.2880, 0.5724, 0.2033])
"""),
    'Tensor.log10_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.log10_()
tensor([-0.6021, -0.3010, -0.1249])
"""),
    'Tensor.log1p_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.log1p_()
tensor([0.2231, 0.4055, 0.5596])
"""),
    'Tensor.log2_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.log2_()
tensor([-2.0000, -1.0000, -0.4150])
"""),
    'Tensor.log_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.log_()
tensor([-1.3863, -0.6931, -0.2877])
"""),
    'Tensor.log_normal_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.log_normal_().shape
ember.Size([3])
"""),
    'Tensor.logical_and_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.logical_and_(y)
tensor([1., 1., 1.])
"""),
    'Tensor.logical_not_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.logical_not_()
tensor([0., 0., 0.])
"""),
    'Tensor.logical_or_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.logical_or_(y)
tensor([1., 1., 1.])
"""),
    'Tensor.logical_xor_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.logical_xor_(y)
tensor([0., 0., 0.])
"""),
    'Tensor.logit_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.logit_()
tensor([-1.0986,  0.0000,  1.0986])
"""),
    'Tensor.long': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.long()
tensor([0, 0, 0])
"""),
    'Tensor.lt_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.lt_(y)
tensor([1., 1., 1.])
"""),
    'Tensor.mH': ('Tensor', """
>>> x = ember.tensor([[[1 + 1j, 2 + 0j]]])
>>> x.mH
tensor([[[1.-1.j],
         [2.-0.j]]])
"""),
    'Tensor.mT': ('Tensor', """
>>> x = ember.arange(6).reshape(1, 2, 3)
>>> x.mT.shape
ember.Size([1, 3, 2])
"""),
    'Tensor.masked_fill_': ('Tensor', """
>>> x = ember.tensor([1.0, -2.0, 3.0])
>>> x.masked_fill_(x < 0, 0.0)
tensor([1., 0., 3.])
"""),
    'Tensor.masked_scatter_': ('Tensor', """
>>> x = ember.zeros(4)
>>> mask = ember.tensor([True, False, True, False])
>>> x.masked_scatter_(mask, ember.tensor([1.0, 2.0]))
tensor([1., 0., 2., 0.])
"""),
    'Tensor.mtia': ('Tensor', """
>>> x = ember.tensor([1.0])
>>> try:
...     x.mtia()
... except AssertionError as e:
...     print(e)
Torch not compiled with MTIA enabled
"""),
    'Tensor.mul_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.mul_(y)
tensor([0.2500, 1.0000, 2.2500])
"""),
    'Tensor.multiply_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.multiply_(y)
tensor([0.2500, 1.0000, 2.2500])
"""),
    'Tensor.mvlgamma_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> x.mvlgamma_(2)
tensor([1.1447, 0.4516, 1.5502])
"""),
    'Tensor.name': ('None', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.name
"""),
    'Tensor.nan_to_num_': ('Tensor', """
>>> x = ember.tensor([float('nan'), 1.0])
>>> x.nan_to_num_(nan=-1.0)
tensor([-1.,  1.])
"""),
    'Tensor.ndimension': ('int', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.ndimension()
1
"""),
    'Tensor.ne_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.ne_(y)
tensor([1., 1., 1.])
"""),
    'Tensor.neg_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.neg_()
tensor([-0.2500, -0.5000, -0.7500])
"""),
    'Tensor.nelement': ('int', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.nelement()
3
"""),
    'Tensor.new_empty': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.new_empty(2, 3).shape
ember.Size([2, 3])
"""),
    'Tensor.new_full': ('Tensor', """
>>> x = ember.zeros(1, dtype=ember.int32)
>>> x.new_full((2, 2), 7)
tensor([[7, 7],
        [7, 7]], dtype=ember.int32)
"""),
    'Tensor.new_ones': ('Tensor', """
>>> x = ember.zeros(1, dtype=ember.float64)
>>> x.new_ones(2, 3)
tensor([[1., 1., 1.],
        [1., 1., 1.]], dtype=ember.float64)
"""),
    'Tensor.new_tensor': ('Tensor', """
>>> x = ember.zeros(2, dtype=ember.float64)
>>> x.new_tensor([1, 2])
tensor([1., 2.], dtype=ember.float64)
"""),
    'Tensor.new_zeros': ('Tensor', """
>>> x = ember.zeros(1, dtype=ember.int64)
>>> x.new_zeros(2, 3)
tensor([[0, 0, 0],
        [0, 0, 0]])
"""),
    'Tensor.nextafter_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.nextafter_(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.normal_': ('Tensor', """
>>> x = ember.empty(3)
>>> x.normal_(mean=0.0, std=2.0).shape
ember.Size([3])
"""),
    'Tensor.numel': ('int', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.numel()
3
"""),
    'Tensor.numpy': ('ndarray', """
>>> x = ember.tensor([1.0, 2.0])
>>> a = x.numpy()
>>> a
array([1., 2.], dtype=float32)
>>> a[0] = 5.0
>>> x
tensor([5., 2.])
"""),
    'Tensor.permute': ('Tensor', """
>>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
ember.Size([4, 2, 3])
"""),
    'Tensor.polygamma': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.polygamma(2)
tensor([-129.3277,  -16.8288,   -5.3026])
"""),
    'Tensor.polygamma_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.polygamma_(2)
tensor([-129.3277,  -16.8288,   -5.3026])
"""),
    'Tensor.pow_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> exponent = ember.tensor([1.0, 2.0, 3.0])
>>> x.pow_(exponent)
tensor([0.2500, 0.2500, 0.4219])
"""),
    'Tensor.put_': ('Tensor', """
>>> x = ember.zeros(2, 2)
>>> x.put_(ember.tensor([0, 3]), ember.tensor([1.0, 9.0]))
tensor([[1., 0.],
        [0., 9.]])
"""),
    'Tensor.rad2deg_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.rad2deg_()
tensor([14.3239, 28.6479, 42.9718])
"""),
    'Tensor.random_': ('Tensor', """
>>> x = ember.empty(3)
>>> x.random_(0, 10).shape
ember.Size([3])
"""),
    'Tensor.real': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.real
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.reciprocal_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.reciprocal_()
tensor([4.0000, 2.0000, 1.3333])
"""),
    'Tensor.register_hook': ('None', """
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> handle = x.register_hook(lambda grad: grad * 10)
>>> (x * 3).sum().backward()
>>> x.grad
tensor([30., 30.])
>>> handle.remove()
"""),
    'Tensor.register_post_accumulate_grad_hook': ('None', """
>>> w = ember.tensor([1.0], requires_grad=True)
>>> seen = []
>>> handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item()))
>>> (w * 4).sum().backward()
>>> seen
[4.0]
"""),
    'Tensor.relu_': ('Tensor', """
>>> x = ember.tensor([-1.0, 0.5, 2.0])
>>> x.relu_()
tensor([0.0000, 0.5000, 2.0000])
"""),
    'Tensor.remainder_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.remainder_(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'Tensor.renorm_': ('Tensor', """
>>> x = ember.tensor([[3.0, 4.0], [0.3, 0.4]])
>>> x.renorm_(2, 0, 1.0)
tensor([[0.6000, 0.8000],
        [0.3000, 0.4000]])
"""),
    'Tensor.repeat': ('Tensor', """
>>> x = ember.tensor([1, 2])
>>> x.repeat(2, 2)
tensor([[1, 2, 1, 2],
        [1, 2, 1, 2]])
"""),
    'Tensor.requires_grad_': ('Tensor', """
>>> x = ember.ones(2)
>>> x.requires_grad_()
tensor([1., 1.], requires_grad=True)
>>> x.requires_grad
True
"""),
    'Tensor.reshape': ('Tensor', """
>>> ember.arange(6).reshape(2, 3)
tensor([[0, 1, 2],
        [3, 4, 5]])
"""),
    'Tensor.reshape_as': ('Tensor', """
>>> x = ember.arange(6)
>>> x.reshape_as(ember.zeros(3, 2))
tensor([[0, 1],
        [2, 3],
        [4, 5]])
"""),
    'Tensor.resize_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0, 4.0])
>>> x.resize_(2, 2)
tensor([[1., 2.],
        [3., 4.]])
"""),
    'Tensor.resize_as_': ('Tensor', """
>>> x = ember.zeros(4)
>>> x.resize_as_(ember.ones(2, 2)).shape
ember.Size([2, 2])
"""),
    'Tensor.retain_grad': ('None', """
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> y = x * 2
>>> y.retain_grad()
>>> y.sum().backward()
>>> y.grad
tensor([1., 1.])
"""),
    'Tensor.round_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.round_()
tensor([0., 0., 1.])
"""),
    'Tensor.rsqrt_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.rsqrt_()
tensor([2.0000, 1.4142, 1.1547])
"""),
    'Tensor.scatter_': ('Tensor', """
>>> x = ember.zeros(2, 3)
>>> x.scatter_(1, ember.tensor([[2], [0]]), ember.tensor([[5.0], [7.0]]))
tensor([[0., 0., 5.],
        [7., 0., 0.]])
"""),
    'Tensor.scatter_add_': ('Tensor', """
>>> x = ember.zeros(3)
>>> x.scatter_add_(0, ember.tensor([0, 2, 0]), ember.tensor([1.0, 2.0, 3.0]))
tensor([4., 0., 2.])
"""),
    'Tensor.scatter_reduce_': ('Tensor', """
>>> x = ember.ones(2)
>>> x.scatter_reduce_(0, ember.tensor([0, 1, 0]), ember.tensor([2.0, 3.0, 4.0]), 'prod')
tensor([8., 3.])
"""),
    'Tensor.sgn_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sgn_()
tensor([1., 1., 1.])
"""),
    'Tensor.share_memory_': ('Tensor', """
>>> x = ember.zeros(2)
>>> x.share_memory_().is_shared()
True
"""),
    'Tensor.short': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.short()
tensor([0, 0, 0], dtype=ember.int16)
"""),
    'Tensor.sigmoid_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sigmoid_()
tensor([0.5622, 0.6225, 0.6792])
"""),
    'Tensor.sign_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sign_()
tensor([1., 1., 1.])
"""),
    'Tensor.sin_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sin_()
tensor([0.2474, 0.4794, 0.6816])
"""),
    'Tensor.sinc_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sinc_()
tensor([0.9003, 0.6366, 0.3001])
"""),
    'Tensor.sinh_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sinh_()
tensor([0.2526, 0.5211, 0.8223])
"""),
    'Tensor.size': ('Size', """
>>> x = ember.zeros(2, 3)
>>> x.size()
ember.Size([2, 3])
>>> x.size(1)
3
>>> x.size(-1)
3
"""),
    'Tensor.split': ('tuple', """
>>> x = ember.arange(5)
>>> x.split(2)
(tensor([0, 1]), tensor([2, 3]), tensor([4]))
>>> x.split([1, 4])
(tensor([0]), tensor([1, 2, 3, 4]))
"""),
    'Tensor.sqrt_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.sqrt_()
tensor([0.5000, 0.7071, 0.8660])
"""),
    'Tensor.square_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.square_()
tensor([0.0625, 0.2500, 0.5625])
"""),
    'Tensor.squeeze_': ('Tensor', """
>>> x = ember.zeros(1, 3, 1)
>>> x.squeeze_().shape
ember.Size([3])
"""),
    'Tensor.storage': ('list', """
>>> x = ember.tensor([1.0, 2.0])
>>> x.storage().tolist()
[1.0, 2.0]
"""),
    'Tensor.storage_offset': ('int', """
>>> x = ember.arange(6)
>>> x[2:].storage_offset()
2
"""),
    'Tensor.stride': ('tuple', """
>>> x = ember.zeros(2, 3)
>>> x.stride()
(3, 1)
>>> x.t().stride()
(1, 3)
"""),
    'Tensor.sub_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.sub_(y)
tensor([-0.7500, -1.5000, -2.2500])
"""),
    'Tensor.subtract_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.subtract_(y)
tensor([-0.7500, -1.5000, -2.2500])
"""),
    'Tensor.swapaxes_': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x.swapaxes_(0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    'Tensor.swapdims_': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x.swapdims_(0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    'Tensor.t_': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> x.t_()
tensor([[1., 3.],
        [2., 4.]])
"""),
    'Tensor.tan_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.tan_()
tensor([0.2553, 0.5463, 0.9316])
"""),
    'Tensor.tanh_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.tanh_()
tensor([0.2449, 0.4621, 0.6351])
"""),
    'Tensor.tile': ('Tensor', """
>>> ember.tensor([1, 2]).tile(2, 1)
tensor([[1, 2],
        [1, 2]])
"""),
    'Tensor.to': ('Tensor', """
>>> x = ember.tensor([1.5, 2.5])
>>> x.to(ember.int64)
tensor([1, 2])
>>> x.to('cpu', dtype=ember.float64)
tensor([1.5000, 2.5000], dtype=ember.float64)
"""),
    'Tensor.tolist': ('list', """
>>> ember.tensor([[1, 2], [3, 4]]).tolist()
[[1, 2], [3, 4]]
"""),
    'Tensor.transpose_': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x.transpose_(0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    'Tensor.tril_': ('Tensor', """
>>> x = ember.ones(3, 3)
>>> x.tril_()
tensor([[1., 0., 0.],
        [1., 1., 0.],
        [1., 1., 1.]])
"""),
    'Tensor.triu_': ('Tensor', """
>>> x = ember.ones(3, 3)
>>> x.triu_(1)
tensor([[0., 1., 1.],
        [0., 0., 1.],
        [0., 0., 0.]])
"""),
    'Tensor.true_divide_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.true_divide_(y)
tensor([0.2500, 0.2500, 0.2500])
"""),
    'Tensor.trunc_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.trunc_()
tensor([0., 0., 0.])
"""),
    'Tensor.type_as': ('Tensor', """
>>> x = ember.tensor([1.5, 2.5])
>>> x.type_as(ember.tensor([1]))
tensor([1, 2])
"""),
    'Tensor.unfold': ('Tensor', """
>>> x = ember.arange(6.0)
>>> x.unfold(0, 3, 2)
tensor([[0., 1., 2.],
        [2., 3., 4.]])
"""),
    'Tensor.uniform_': ('Tensor', """
>>> x = ember.empty(3)
>>> x.uniform_(-1.0, 1.0).shape
ember.Size([3])
"""),
    'Tensor.unsqueeze_': ('Tensor', """
>>> x = ember.zeros(3)
>>> x.unsqueeze_(0).shape
ember.Size([1, 3])
"""),
    'Tensor.untyped_storage': ('int', """
>>> x = ember.tensor([1.0, 2.0])
>>> x.untyped_storage().nbytes()
8
"""),
    'Tensor.view': ('Tensor', """
>>> x = ember.arange(6.0)
>>> x.view(2, 3)
tensor([[0., 1., 2.],
        [3., 4., 5.]])
>>> x.view(-1, 2).shape
ember.Size([3, 2])
"""),
    'Tensor.view_as': ('Tensor', """
>>> x = ember.arange(6)
>>> x.view_as(ember.zeros(2, 3))
tensor([[0, 1, 2],
        [3, 4, 5]])
"""),
    'Tensor.volatile': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> x.volatile
False
"""),
    'Tensor.where': ('Tensor', """
>>> x = ember.tensor([1.0, -2.0, 3.0])
>>> x.where(x > 0, ember.tensor(0.0))
tensor([1., 0., 3.])
"""),
    'Tensor.xlogy_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> x.xlogy_(y)
tensor([0.0000, 0.3466, 0.8240])
"""),
    'Tensor.xpu': ('Tensor', """
>>> x = ember.tensor([1.0])
>>> try:
...     x.xpu()
... except AssertionError as e:
...     print(e)
Torch not compiled with XPU enabled
"""),
    'Tensor.zero_': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0])
>>> x.zero_()
tensor([0., 0.])
"""),
    'abs': ('Tensor', """
>>> ember.abs(ember.tensor([-1.5, 0.0, 2.0]))
tensor([1.5000, 0.0000, 2.0000])
"""),
    'acos': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.acos(x)
tensor([1.3181, 1.0472, 0.7227])
>>> x.acos()
tensor([1.3181, 1.0472, 0.7227])
"""),
    'acosh': ('Tensor', """
>>> ember.acosh(ember.tensor([1.0, 2.0, 3.0]))
tensor([0.0000, 1.3170, 1.7627])
"""),
    'add': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> ember.add(x, ember.tensor([0.5, 0.5, 0.5]))
tensor([1.5000, 2.5000, 3.5000])
>>> ember.add(x, 1, alpha=2)
tensor([3., 4., 5.])
>>> x.add(x)
tensor([2., 4., 6.])
"""),
    'addbmm': ('Tensor', """
>>> b1 = ember.ones(3, 2, 4)
>>> b2 = ember.ones(3, 4, 2)
>>> ember.addbmm(ember.zeros(2, 2), b1, b2)
tensor([[12., 12.],
        [12., 12.]])
"""),
    'addcdiv': ('Tensor', """
>>> x = ember.zeros(2)
>>> ember.addcdiv(x, ember.tensor([1.0, 2.0]), ember.tensor([4.0, 4.0]), value=2)
tensor([0.5000, 1.0000])
>>> x.addcdiv(ember.tensor([1.0, 2.0]), ember.tensor([4.0, 4.0]), value=2)
tensor([0.5000, 1.0000])
"""),
    'addcmul': ('Tensor', """
>>> x = ember.zeros(2)
>>> ember.addcmul(x, ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]), value=0.5)
tensor([1.5000, 4.0000])
>>> x.addcmul(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]), value=0.5)
tensor([1.5000, 4.0000])
"""),
    'addmm': ('Tensor', """
>>> M = ember.ones(2, 2)
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.addmm(M, a, a, beta=0.5, alpha=2.0)
tensor([[14.5000, 20.5000],
        [30.5000, 44.5000]])
>>> M.addmm(a, a, beta=0.5, alpha=2.0)
tensor([[14.5000, 20.5000],
        [30.5000, 44.5000]])
"""),
    'addmv': ('Tensor', """
>>> m = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> v = ember.tensor([1.0, -1.0])
>>> ember.addmv(ember.tensor([1.0, 1.0]), m, v)
tensor([0., 0.])
"""),
    'addr': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> vec1 = ember.tensor([1.0, 2.0, 3.0])
>>> vec2 = ember.tensor([0.5, 0.5, 0.5])
>>> ember.addr(x, vec1, vec2)
tensor([[0.7500, 1.0000, 1.2500],
        [1.2500, 1.5000, 1.7500],
        [1.7500, 2.0000, 2.2500]])
>>> x.addr(vec1, vec2)
tensor([[0.7500, 1.0000, 1.2500],
        [1.2500, 1.5000, 1.7500],
        [1.7500, 2.0000, 2.2500]])
"""),
    'adjoint': ('Tensor', """
>>> ember.adjoint(ember.tensor([[1 + 1j, 2 + 0j]]))
tensor([[1.-1.j],
        [2.-0.j]])
"""),
    'all': ('Tensor', """
>>> x = ember.tensor([[True, False], [True, True]])
>>> ember.all(x)
tensor(False)
>>> ember.all(x, dim=1)
tensor([False,  True])
>>> x.all()
tensor(False)
"""),
    'allclose': ('bool', """
>>> ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-9]))
True
"""),
    'amax': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.amax(x, dim=0)
tensor([3., 5.])
>>> x.amax(dim=0)
tensor([3., 5.])
"""),
    'amin': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.amin(x, dim=1)
tensor([1., 2.])
>>> x.amin(dim=1)
tensor([1., 2.])
"""),
    'aminmax': ('namedtuple:min, max', """
>>> ember.aminmax(ember.tensor([3.0, 1.0, 2.0]))
ember.return_types.aminmax(
min=tensor(1.),
max=tensor(3.))
"""),
    'angle': ('Tensor', """
>>> ember.angle(ember.tensor([1j, -1 + 0j]))
tensor([1.5708, 3.1416])
"""),
    'any': ('Tensor', """
>>> x = ember.tensor([[True, False], [False, False]])
>>> ember.any(x)
tensor(True)
>>> ember.any(x, dim=1)
tensor([ True, False])
>>> x.any()
tensor(True)
"""),
    'argmax': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.argmax(x)
tensor(1)
>>> ember.argmax(x, dim=1)
tensor([1, 0])
>>> x.argmax()
tensor(1)
"""),
    'argmin': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.argmin(x)
tensor(0)
>>> ember.argmin(x, dim=0)
tensor([0, 1])
>>> x.argmin()
tensor(0)
"""),
    'argsort': ('Tensor', """
>>> ember.argsort(ember.tensor([3.0, 1.0, 2.0]))
tensor([1, 2, 0])
>>> ember.argsort(ember.tensor([3.0, 1.0, 2.0]), descending=True)
tensor([0, 2, 1])
"""),
    'argwhere': ('Tensor', """
>>> ember.argwhere(ember.tensor([[0, 1], [2, 0]]))
tensor([[0, 1],
        [1, 0]])
"""),
    'as_strided': ('Tensor', """
>>> x = ember.arange(8.0).reshape(2, 2, 2)
>>> ember.as_strided(x, (2, 3), (1, 2))
tensor([[0., 2., 4.],
        [1., 3., 5.]])
>>> x.as_strided((2, 3), (1, 2))
tensor([[0., 2., 4.],
        [1., 3., 5.]])
"""),
    'asarray': ('Tensor', """
>>> import numpy as np
>>> a = np.array([1.0, 2.0])
>>> t = ember.asarray(a)
>>> t
tensor([1., 2.], dtype=ember.float64)
>>> t.data_ptr() == a.ctypes.data
True
>>> ember.asarray([1, 2], dtype=ember.float64)
tensor([1., 2.], dtype=ember.float64)
"""),
    'asin': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.asin(x)
tensor([0.2527, 0.5236, 0.8481])
>>> x.asin()
tensor([0.2527, 0.5236, 0.8481])
"""),
    'asinh': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.asinh(x)
tensor([0.2475, 0.4812, 0.6931])
>>> x.asinh()
tensor([0.2475, 0.4812, 0.6931])
"""),
    'atan': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.atan(x)
tensor([0.2450, 0.4636, 0.6435])
>>> x.atan()
tensor([0.2450, 0.4636, 0.6435])
"""),
    'atan2': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.atan2(x, y)
tensor([0.2450, 0.2450, 0.2450])
>>> x.atan2(y)
tensor([0.2450, 0.2450, 0.2450])
"""),
    'atanh': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.atanh(x)
tensor([0.2554, 0.5493, 0.9730])
>>> x.atanh()
tensor([0.2554, 0.5493, 0.9730])
"""),
    'atleast_1d': ('Tensor', """
>>> ember.atleast_1d(ember.tensor(3.0))
tensor([3.])
>>> ember.atleast_1d(ember.tensor(1), ember.tensor([2, 3]))
(tensor([1]), tensor([2, 3]))
"""),
    'atleast_2d': ('Tensor', """
>>> ember.atleast_2d(ember.tensor([1.0, 2.0]))
tensor([[1., 2.]])
"""),
    'atleast_3d': ('Tensor', """
>>> ember.atleast_3d(ember.tensor([1.0, 2.0])).shape
ember.Size([1, 2, 1])
"""),
    'baddbmm': ('Tensor', """
>>> b = ember.ones(2, 2, 3)
>>> ember.baddbmm(ember.zeros(2, 2, 2), b, b.mT, alpha=0.5)
tensor([[[1.5000, 1.5000],
         [1.5000, 1.5000]],
<BLANKLINE>
        [[1.5000, 1.5000],
         [1.5000, 1.5000]]])
"""),
    'bartlett_window': ('Tensor', """
>>> ember.bartlett_window(4)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""),
    'bincount': ('Tensor', """
>>> ember.bincount(ember.tensor([0, 1, 1, 3]))
tensor([1, 2, 0, 1])
"""),
    'bitwise_and': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.bitwise_and(x, y)
tensor([4, 4, 1])
>>> x.bitwise_and(y)
tensor([4, 4, 1])
"""),
    'bitwise_left_shift': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.bitwise_left_shift(x, y)
tensor([ 96, 256,  72])
>>> x.bitwise_left_shift(y)
tensor([ 96, 256,  72])
"""),
    'bitwise_not': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> ember.bitwise_not(x)
tensor([ -7,  -5, -10])
>>> x.bitwise_not()
tensor([ -7,  -5, -10])
"""),
    'bitwise_or': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.bitwise_or(x, y)
tensor([ 6,  6, 11])
>>> x.bitwise_or(y)
tensor([ 6,  6, 11])
"""),
    'bitwise_right_shift': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.bitwise_right_shift(x, y)
tensor([0, 0, 1])
>>> x.bitwise_right_shift(y)
tensor([0, 0, 1])
"""),
    'bitwise_xor': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.bitwise_xor(x, y)
tensor([ 2,  2, 10])
>>> x.bitwise_xor(y)
tensor([ 2,  2, 10])
"""),
    'blackman_window': ('Tensor', """
>>> ember.blackman_window(4)
tensor([-1.3878e-17,  3.4000e-01,  1.0000e+00,  3.4000e-01])
"""),
    'block_diag': ('Tensor', """
>>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor([[3], [4]]))
tensor([[1, 2, 0],
        [0, 0, 3],
        [0, 0, 4]])
"""),
    'bmm': ('Tensor', """
>>> ember.bmm(ember.ones(2, 1, 3), ember.ones(2, 3, 2))
tensor([[[3., 3.]],
<BLANKLINE>
        [[3., 3.]]])
"""),
    'broadcast_shapes': ('Size', """
>>> ember.broadcast_shapes((2, 1), (3,))
ember.Size([2, 3])
"""),
    'broadcast_tensors': ('tuple', """
>>> a, b = ember.broadcast_tensors(ember.tensor([[1.0], [2.0]]), ember.tensor([0.0, 1.0, 2.0]))
>>> a.shape, b.shape
(ember.Size([2, 3]), ember.Size([2, 3]))
"""),
    'broadcast_to': ('Tensor', """
>>> ember.broadcast_to(ember.tensor([1, 2, 3]), (2, 3))
tensor([[1, 2, 3],
        [1, 2, 3]])
"""),
    'bucketize': ('Tensor', """
>>> ember.bucketize(ember.tensor([0.5, 3.0, 9.0]), ember.tensor([1.0, 3.0, 5.0]))
tensor([0, 1, 3])
"""),
    'cartesian_prod': ('Tensor', """
>>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
tensor([[1, 3],
        [1, 4],
        [2, 3],
        [2, 4]])
"""),
    'cat': ('Tensor', """
>>> a = ember.tensor([[1.0, 2.0]])
>>> b = ember.tensor([[3.0, 4.0]])
>>> ember.cat([a, b])
tensor([[1., 2.],
        [3., 4.]])
>>> ember.cat([a, b], dim=1)
tensor([[1., 2., 3., 4.]])
"""),
    'cdist': ('Tensor', """
>>> ember.cdist(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0], [1.0, 0.0]]))
tensor([[5., 1.]])
"""),
    'ceil': ('Tensor', """
>>> ember.ceil(ember.tensor([-1.5, 0.2, 2.7]))
tensor([-1.,  1.,  3.])
"""),
    'chain_matmul': ('Tensor', """
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.chain_matmul(a, a, ember.eye(2))
tensor([[ 7., 10.],
        [15., 22.]])
"""),
    'cholesky': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.cholesky(x)
tensor([[1.4142, 0.0000],
        [0.7071, 1.5811]])
>>> x.cholesky()
tensor([[1.4142, 0.0000],
        [0.7071, 1.5811]])
"""),
    'cholesky_inverse': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.cholesky_inverse(x)
tensor([[ 0.2778, -0.0556],
        [-0.0556,  0.1111]])
>>> x.cholesky_inverse()
tensor([[ 0.2778, -0.0556],
        [-0.0556,  0.1111]])
"""),
    'cholesky_solve': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> input2 = ember.tensor([[1.0, 0.0], [2.0, 1.0]])
>>> ember.cholesky_solve(x, input2)
tensor([[ 8., -1.],
        [-3.,  1.]])
>>> x.cholesky_solve(input2)
tensor([[ 8., -1.],
        [-3.,  1.]])
"""),
    'chunk': ('tuple', """
>>> ember.chunk(ember.arange(5), 2)
(tensor([0, 1, 2]), tensor([3, 4]))
"""),
    'clamp_max': ('Tensor', """
>>> ember.clamp_max(ember.tensor([-1.0, 0.5, 2.0]), 1.0)
tensor([-1.0000,  0.5000,  1.0000])
"""),
    'clamp_min': ('Tensor', """
>>> ember.clamp_min(ember.tensor([-1.0, 0.5, 2.0]), 0.0)
tensor([0.0000, 0.5000, 2.0000])
"""),
    'clone': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0])
>>> y = ember.clone(x)
>>> y.data_ptr() != x.data_ptr(), y
(True, tensor([1., 2.]))
"""),
    'column_stack': ('Tensor', """
>>> ember.column_stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
tensor([[1, 3],
        [2, 4]])
"""),
    'combinations': ('Tensor', """
>>> ember.combinations(ember.tensor([1, 2, 3]))
tensor([[1, 2],
        [1, 3],
        [2, 3]])
"""),
    'complex': ('Tensor', """
>>> ember.complex(ember.tensor([1.0, 2.0]), ember.tensor([0.5, -1.0]))
tensor([1.+0.5000j, 2.-1.0000j])
"""),
    'concatenate': ('Tensor', """
>>> ember.concatenate([ember.tensor([1, 2]), ember.tensor([3])])
tensor([1, 2, 3])
"""),
    'conj': ('Tensor', """
>>> ember.conj(ember.tensor([1 + 2j]))
tensor([1.-2.j])
"""),
    'conj_physical': ('Tensor', """
>>> ember.conj_physical(ember.tensor([1 + 2j]))
tensor([1.-2.j])
"""),
    'copysign': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.copysign(x, y)
tensor([0.2500, 0.5000, 0.7500])
>>> x.copysign(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'corrcoef': ('Tensor', """
>>> x = ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]])
>>> ember.corrcoef(x)
tensor([[ 1.0000, -0.9820],
        [-0.9820,  1.0000]])
>>> x.corrcoef()
tensor([[ 1.0000, -0.9820],
        [-0.9820,  1.0000]])
"""),
    'cos': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.cos(x)
tensor([0.9689, 0.8776, 0.7317])
>>> x.cos()
tensor([0.9689, 0.8776, 0.7317])
"""),
    'cosh': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.cosh(x)
tensor([1.0314, 1.1276, 1.2947])
>>> x.cosh()
tensor([1.0314, 1.1276, 1.2947])
"""),
    'count_nonzero': ('Tensor', """
>>> ember.count_nonzero(ember.tensor([[0, 1], [2, 0]]))
tensor(2)
>>> ember.count_nonzero(ember.tensor([[0, 1], [2, 0]]), dim=0)
tensor([1, 1])
"""),
    'cov': ('Tensor', """
>>> x = ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
>>> ember.cov(x)
tensor([[ 1., -1.],
        [-1.,  1.]])
>>> x.cov()
tensor([[ 1., -1.],
        [-1.,  1.]])
"""),
    'cross': ('Tensor', """
>>> ember.cross(ember.tensor([1.0, 0.0, 0.0]), ember.tensor([0.0, 1.0, 0.0]), dim=0)
tensor([0., 0., 1.])
"""),
    'cummax': ('namedtuple:values, indices', """
>>> ember.cummax(ember.tensor([1.0, 3.0, 2.0, 5.0]), dim=0)
ember.return_types.cummax(
values=tensor([1., 3., 3., 5.]),
indices=tensor([0, 1, 1, 3]))
"""),
    'cummin': ('namedtuple:values, indices', """
>>> ember.cummin(ember.tensor([4.0, 3.0, 5.0, 1.0]), dim=0)
ember.return_types.cummin(
values=tensor([4., 3., 3., 1.]),
indices=tensor([0, 1, 1, 3]))
"""),
    'cumprod': ('Tensor', """
>>> ember.cumprod(ember.tensor([1.0, 2.0, 3.0, 4.0]), dim=0)
tensor([ 1.,  2.,  6., 24.])
"""),
    'cumsum': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> ember.cumsum(x, dim=1)
tensor([[ 1,  3,  6],
        [ 4,  9, 15]])
>>> x.cumsum(0)
tensor([[1, 2, 3],
        [5, 7, 9]])
"""),
    'cumulative_trapezoid': ('Tensor', """
>>> ember.cumulative_trapezoid(ember.tensor([1.0, 2.0, 3.0]))
tensor([1.5000, 4.0000])
"""),
    'deg2rad': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.deg2rad(x)
tensor([0.0044, 0.0087, 0.0131])
>>> x.deg2rad()
tensor([0.0044, 0.0087, 0.0131])
"""),
    'det': ('Tensor', """
>>> ember.det(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
tensor(-2.)
"""),
    'diag': ('Tensor', """
>>> ember.diag(ember.tensor([1, 2]))
tensor([[1, 0],
        [0, 2]])
>>> ember.diag(ember.tensor([[1, 2], [3, 4]]))
tensor([1, 4])
"""),
    'diag_embed': ('Tensor', """
>>> ember.diag_embed(ember.tensor([[1, 2], [3, 4]]))
tensor([[[1, 0],
         [0, 2]],
<BLANKLINE>
        [[3, 0],
         [0, 4]]])
"""),
    'diagflat': ('Tensor', """
>>> ember.diagflat(ember.tensor([1, 2]))
tensor([[1, 0],
        [0, 2]])
"""),
    'diagonal': ('Tensor', """
>>> ember.diagonal(ember.tensor([[1, 2], [3, 4]]))
tensor([1, 4])
>>> ember.diagonal(ember.tensor([[1, 2], [3, 4]]), offset=1)
tensor([2])
"""),
    'diff': ('Tensor', """
>>> ember.diff(ember.tensor([1, 4, 9, 16]))
tensor([3, 5, 7])
"""),
    'digamma': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.digamma(x)
tensor([-4.2275, -1.9635, -1.0859])
>>> x.digamma()
tensor([-4.2275, -1.9635, -1.0859])
"""),
    'dist': ('Tensor', """
>>> ember.dist(ember.tensor([0.0, 0.0]), ember.tensor([3.0, 4.0]))
tensor(5.)
"""),
    'div': ('Tensor', """
>>> x = ember.tensor([7.0, -7.0])
>>> ember.div(x, 2)
tensor([ 3.5000, -3.5000])
>>> ember.div(x, 2, rounding_mode='floor')
tensor([ 3., -4.])
>>> ember.div(x, 2, rounding_mode='trunc')
tensor([ 3., -3.])
>>> x.div(2)
tensor([ 3.5000, -3.5000])
"""),
    'dot': ('Tensor', """
>>> ember.dot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
tensor(11.)
"""),
    'dsplit': ('list', """
>>> x = ember.arange(8.0).reshape(1, 2, 4)
>>> [t.shape for t in ember.dsplit(x, 2)]
[ember.Size([1, 2, 2]), ember.Size([1, 2, 2])]
"""),
    'dstack': ('Tensor', """
>>> ember.dstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
tensor([[[1, 3],
         [2, 4]]])
"""),
    'einsum': ('Tensor', """
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.einsum('ij,jk->ik', a, a)
tensor([[ 7., 10.],
        [15., 22.]])
>>> ember.einsum('ii', a)
tensor(5.)
"""),
    'empty': ('Tensor', """
>>> ember.empty(2, 3).shape
ember.Size([2, 3])
"""),
    'empty_like': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.empty_like(x).shape
ember.Size([3])
"""),
    'eq': ('Tensor', """
>>> ember.eq(ember.tensor([1, 2, 3]), ember.tensor([1, 0, 3]))
tensor([ True, False,  True])
"""),
    'equal': ('tuple', """
>>> ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2])), ember.equal(ember.tensor([1, 2]), ember.tensor([1]))
(True, False)
"""),
    'erf': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.erf(x)
tensor([0.2763, 0.5205, 0.7112])
>>> x.erf()
tensor([0.2763, 0.5205, 0.7112])
"""),
    'erfc': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.erfc(x)
tensor([0.7237, 0.4795, 0.2888])
>>> x.erfc()
tensor([0.7237, 0.4795, 0.2888])
"""),
    'erfinv': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.erfinv(x)
tensor([0.2253, 0.4769, 0.8134])
>>> x.erfinv()
tensor([0.2253, 0.4769, 0.8134])
"""),
    'exp': ('Tensor', """
>>> ember.exp(ember.tensor([0.0, 1.0, 2.0]))
tensor([1.0000, 2.7183, 7.3891])
"""),
    'exp2': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.exp2(x)
tensor([1.1892, 1.4142, 1.6818])
>>> x.exp2()
tensor([1.1892, 1.4142, 1.6818])
"""),
    'expm1': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.expm1(x)
tensor([0.2840, 0.6487, 1.1170])
>>> x.expm1()
tensor([0.2840, 0.6487, 1.1170])
"""),
    'fft.fft': ('Tensor', """
>>> ember.fft.fft(ember.tensor([1.0, 0.0, -1.0, 0.0]))
tensor([0.+0.j, 2.+0.j, 0.+0.j, 2.+0.j])
""", 'ember._ops.fft:fft'),
    'fft.fft2': ('Tensor', """
>>> ember.fft.fft2(ember.tensor([[1.0, 0.0], [0.0, 0.0]]))
tensor([[1.+0.j, 1.+0.j],
        [1.+0.j, 1.+0.j]])
""", 'ember._ops.fft:fft2'),
    'fft.fftfreq': ('Tensor', """
>>> ember.fft.fftfreq(4)
tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
>>> ember.fft.fftfreq(4, d=0.5)
tensor([ 0.0000,  0.5000, -1.0000, -0.5000])
""", 'ember._ops.fft:fftfreq'),
    'fft.fftn': ('Tensor', """
>>> ember.fft.fftn(ember.ones(2, 2, 2)).shape
ember.Size([2, 2, 2])
""", 'ember._ops.fft:fftn'),
    'fft.fftshift': ('Tensor', """
>>> ember.fft.fftshift(ember.fft.fftfreq(4))
tensor([-0.5000, -0.2500,  0.0000,  0.2500])
""", 'ember._ops.fft:fftshift'),
    'fft.hfft': ('Tensor', """
>>> ember.fft.hfft(ember.tensor([1 + 0j, 0j, 0j]))
tensor([1., 1., 1., 1.])
""", 'ember._ops.fft:hfft'),
    'fft.hfft2': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.fft.hfft2(x)
tensor([[ 7., -1.],
        [-1.,  3.]])
""", 'ember._ops.fft:hfft2'),
    'fft.hfftn': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.fft.hfftn(x)
tensor([ 2.0000, -0.5000,  0.0000, -0.5000])
""", 'ember._ops.fft:hfftn'),
    'fft.ifft': ('Tensor', """
>>> ember.fft.ifft(ember.tensor([0j, 2 + 0j, 0j, 2 + 0j]))
tensor([ 1.+0.j,  0.+0.j, -1.+0.j,  0.+0.j])
""", 'ember._ops.fft:ifft'),
    'fft.ifft2': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.fft.ifft2(x)
tensor([[ 1.7500+0.j, -0.2500+0.j],
        [-0.2500+0.j,  0.7500+0.j]])
""", 'ember._ops.fft:ifft2'),
    'fft.ifftn': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.fft.ifftn(x)
tensor([ 0.5000+0.0000j, -0.1250-0.0722j, -0.1250+0.0722j])
""", 'ember._ops.fft:ifftn'),
    'fft.ifftshift': ('Tensor', """
>>> ember.fft.ifftshift(ember.fft.fftshift(ember.fft.fftfreq(4)))
tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
""", 'ember._ops.fft:ifftshift'),
    'fft.ihfft': ('Tensor', """
>>> ember.fft.ihfft(ember.tensor([1.0, 0.0, 0.0, 0.0]))
tensor([0.2500-0.j, 0.2500-0.j, 0.2500-0.j])
""", 'ember._ops.fft:ihfft'),
    'fft.ihfft2': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.fft.ihfft2(x)
tensor([[ 1.7500-0.j, -0.2500-0.j],
        [-0.2500-0.j,  0.7500-0.j]])
""", 'ember._ops.fft:ihfft2'),
    'fft.ihfftn': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.fft.ihfftn(x)
tensor([ 0.5000-0.0000j, -0.1250-0.0722j])
""", 'ember._ops.fft:ihfftn'),
    'fft.irfft': ('Tensor', """
>>> ember.fft.irfft(ember.tensor([0j, 2 + 0j, 0j]))
tensor([ 1.,  0., -1.,  0.])
""", 'ember._ops.fft:irfft'),
    'fft.irfft2': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.fft.irfft2(x)
tensor([[ 1.7500, -0.2500],
        [-0.2500,  0.7500]])
""", 'ember._ops.fft:irfft2'),
    'fft.irfftn': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.fft.irfftn(x)
tensor([ 0.5000, -0.1250,  0.0000, -0.1250])
""", 'ember._ops.fft:irfftn'),
    'fft.rfft': ('Tensor', """
>>> ember.fft.rfft(ember.tensor([1.0, 0.0, -1.0, 0.0]))
tensor([0.+0.j, 2.+0.j, 0.+0.j])
""", 'ember._ops.fft:rfft'),
    'fft.rfft2': ('Tensor', """
>>> ember.fft.rfft2(ember.ones(2, 4)).shape
ember.Size([2, 3])
""", 'ember._ops.fft:rfft2'),
    'fft.rfftfreq': ('Tensor', """
>>> ember.fft.rfftfreq(4)
tensor([0.0000, 0.2500, 0.5000])
""", 'ember._ops.fft:rfftfreq'),
    'fft.rfftn': ('Tensor', """
>>> ember.fft.rfftn(ember.ones(2, 2, 4)).shape
ember.Size([2, 2, 3])
""", 'ember._ops.fft:rfftn'),
    'flatten': ('Tensor', """
>>> x = ember.zeros(2, 3, 4)
>>> ember.flatten(x).shape
ember.Size([24])
>>> ember.flatten(x, start_dim=1).shape
ember.Size([2, 12])
>>> x.flatten().shape
ember.Size([24])
"""),
    'flip': ('Tensor', """
>>> ember.flip(ember.tensor([[1, 2], [3, 4]]), (0,))
tensor([[3, 4],
        [1, 2]])
>>> ember.tensor([1, 2, 3]).flip(0)
tensor([3, 2, 1])
"""),
    'fliplr': ('Tensor', """
>>> ember.fliplr(ember.tensor([[1, 2], [3, 4]]))
tensor([[2, 1],
        [4, 3]])
"""),
    'flipud': ('Tensor', """
>>> ember.flipud(ember.tensor([[1, 2], [3, 4]]))
tensor([[3, 4],
        [1, 2]])
"""),
    'float_power': ('Tensor', """
>>> ember.float_power(ember.tensor([1, 2, 3]), 2)
tensor([1., 4., 9.], dtype=ember.float64)
"""),
    'floor': ('Tensor', """
>>> ember.floor(ember.tensor([-1.5, 0.2, 2.7]))
tensor([-2.,  0.,  2.])
"""),
    'floor_divide': ('Tensor', """
>>> ember.floor_divide(ember.tensor([7, -7]), 2)
tensor([ 3, -4])
"""),
    'fmax': ('Tensor', """
>>> ember.fmax(ember.tensor([1.0, float('nan')]), ember.tensor([3.0, 2.0]))
tensor([3., 2.])
"""),
    'fmin': ('Tensor', """
>>> ember.fmin(ember.tensor([1.0, float('nan')]), ember.tensor([3.0, 2.0]))
tensor([1., 2.])
"""),
    'fmod': ('Tensor', """
>>> ember.fmod(ember.tensor([7, -7]), 3)
tensor([ 1, -1])
"""),
    'frac': ('Tensor', """
>>> ember.frac(ember.tensor([-1.5, 0.2, 2.7]))
tensor([-0.5000,  0.2000,  0.7000])
"""),
    'from_dlpack': ('Tensor', """
>>> import numpy as np
>>> ember.from_dlpack(np.arange(3.0))
tensor([0., 1., 2.], dtype=ember.float64)
"""),
    'full_like': ('Tensor', """
>>> ember.full_like(ember.zeros(2, dtype=ember.int32), 7)
tensor([7, 7], dtype=ember.int32)
"""),
    'gather': ('Tensor', """
>>> x = ember.tensor([[1, 2], [3, 4]])
>>> ember.gather(x, 1, ember.tensor([[1], [0]]))
tensor([[2],
        [3]])
>>> x.gather(1, ember.tensor([[1], [0]]))
tensor([[2],
        [3]])
"""),
    'gcd': ('Tensor', """
>>> ember.gcd(ember.tensor([12, 18]), ember.tensor([8, 24]))
tensor([4, 6])
"""),
    'ge': ('Tensor', """
>>> ember.ge(ember.tensor([1, 2, 3]), 2)
tensor([False,  True,  True])
"""),
    'gt': ('Tensor', """
>>> ember.gt(ember.tensor([1, 2, 3]), 2)
tensor([False, False,  True])
"""),
    'hamming_window': ('Tensor', """
>>> ember.hamming_window(4)
tensor([0.0800, 0.5400, 1.0000, 0.5400])
"""),
    'hann_window': ('Tensor', """
>>> ember.hann_window(4)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""),
    'heaviside': ('Tensor', """
>>> ember.heaviside(ember.tensor([-1.0, 0.0, 2.0]), ember.tensor([0.5]))
tensor([0.0000, 0.5000, 1.0000])
"""),
    'histc': ('Tensor', """
>>> ember.histc(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=4)
tensor([0., 2., 1., 1.])
"""),
    'histogram': ('namedtuple:hist, bin_edges', """
>>> ember.histogram(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3)
ember.return_types.histogram(
hist=tensor([2., 1., 1.]),
bin_edges=tensor([1., 2., 3., 4.]))
"""),
    'hsplit': ('tuple', """
>>> ember.hsplit(ember.arange(6).reshape(2, 3), 3)
(tensor([[0],
        [3]]), tensor([[1],
        [4]]), tensor([[2],
        [5]]))
"""),
    'hstack': ('Tensor', """
>>> ember.hstack([ember.tensor([1, 2]), ember.tensor([3])])
tensor([1, 2, 3])
"""),
    'hypot': ('Tensor', """
>>> ember.hypot(ember.tensor([3.0, 5.0]), ember.tensor([4.0, 12.0]))
tensor([ 5., 13.])
"""),
    'i0': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.i0(x)
tensor([1.0157, 1.0635, 1.1456])
>>> x.i0()
tensor([1.0157, 1.0635, 1.1456])
"""),
    'imag': ('Tensor', """
>>> ember.imag(ember.tensor([1 + 2j, 3 - 4j]))
tensor([ 2., -4.])
"""),
    'index_add': ('Tensor', """
>>> ember.index_add(ember.zeros(3), 0, ember.tensor([0, 2, 0]), ember.tensor([1.0, 2.0, 3.0]))
tensor([4., 0., 2.])
"""),
    'index_copy': ('Tensor', """
>>> ember.index_copy(ember.zeros(3), 0, ember.tensor([2, 0]), ember.tensor([1.0, 2.0]))
tensor([2., 0., 1.])
"""),
    'index_fill': ('Tensor', """
>>> ember.index_fill(ember.zeros(2, 3), 1, ember.tensor([0, 2]), -1.0)
tensor([[-1.,  0., -1.],
        [-1.,  0., -1.]])
"""),
    'index_put': ('Tensor', """
>>> ember.index_put(ember.zeros(3), (ember.tensor([0, 2]),), ember.tensor([5.0, 7.0]))
tensor([5., 0., 7.])
"""),
    'index_put_': ('Tensor', """
>>> x = ember.zeros(3)
>>> ember.index_put_(x, (ember.tensor([1]),), ember.tensor(4.0))
tensor([0., 4., 0.])
>>> x.index_put_((ember.tensor([1]),), ember.tensor(4.0))
tensor([0., 4., 0.])
"""),
    'index_reduce': ('Tensor', """
>>> ember.index_reduce(ember.ones(3), 0, ember.tensor([0, 0, 2]), ember.tensor([2.0, 3.0, 4.0]), 'prod')
tensor([6., 1., 4.])
"""),
    'index_select': ('Tensor', """
>>> x = ember.tensor([[1, 2], [3, 4], [5, 6]])
>>> ember.index_select(x, 0, ember.tensor([0, 2]))
tensor([[1, 2],
        [5, 6]])
>>> x.index_select(0, ember.tensor([0, 2]))
tensor([[1, 2],
        [5, 6]])
"""),
    'inner': ('Tensor', """
>>> ember.inner(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
tensor(11.)
"""),
    'inverse': ('Tensor', """
>>> ember.inverse(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])
"""),
    'is_conj': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.is_conj(x)
False
>>> x.is_conj()
False
"""),
    'is_neg': ('bool', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.is_neg(x)
False
>>> x.is_neg()
False
"""),
    'isfinite': ('Tensor', """
>>> ember.isfinite(ember.tensor([1.0, float('inf'), float('nan')]))
tensor([ True, False, False])
"""),
    'isinf': ('Tensor', """
>>> ember.isinf(ember.tensor([1.0, float('inf'), -float('inf')]))
tensor([False,  True,  True])
"""),
    'isnan': ('Tensor', """
>>> ember.isnan(ember.tensor([1.0, float('nan')]))
tensor([False,  True])
"""),
    'isneginf': ('Tensor', """
>>> ember.isneginf(ember.tensor([1.0, float('inf'), -float('inf')]))
tensor([False, False,  True])
"""),
    'isposinf': ('Tensor', """
>>> ember.isposinf(ember.tensor([1.0, float('inf'), -float('inf')]))
tensor([False,  True, False])
"""),
    'isreal': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.isreal(x)
tensor([True, True, True])
>>> x.isreal()
tensor([True, True, True])
"""),
    'istft': ('Tensor', """
>>> x = ember.arange(16.0)
>>> spec = ember.stft(x, n_fft=8, window=ember.hann_window(8), return_complex=True)
>>> ember.istft(spec, n_fft=8, window=ember.hann_window(8)).shape
ember.Size([16])
>>> spec.istft(n_fft=8, window=ember.hann_window(8)).shape
ember.Size([16])
"""),
    'kaiser_window': ('Tensor', """
>>> ember.kaiser_window(4)
tensor([5.2773e-05, 2.1567e-01, 1.0000e+00, 2.1567e-01])
"""),
    'kron': ('Tensor', """
>>> ember.kron(ember.eye(2), ember.tensor([[1, 2], [3, 4]]))
tensor([[1., 2., 0., 0.],
        [3., 4., 0., 0.],
        [0., 0., 1., 2.],
        [0., 0., 3., 4.]])
"""),
    'kthvalue': ('namedtuple:values, indices', """
>>> ember.kthvalue(ember.tensor([4.0, 1.0, 3.0, 2.0]), 2)
ember.return_types.kthvalue(
values=tensor(2.),
indices=tensor(3))
"""),
    'lcm': ('Tensor', """
>>> ember.lcm(ember.tensor([4, 6]), ember.tensor([6, 8]))
tensor([12, 24])
"""),
    'le': ('Tensor', """
>>> ember.le(ember.tensor([1, 2, 3]), 2)
tensor([ True,  True, False])
"""),
    'lerp': ('Tensor', """
>>> ember.lerp(ember.tensor([0.0, 10.0]), ember.tensor([10.0, 20.0]), 0.25)
tensor([ 2.5000, 12.5000])
"""),
    'lgamma': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.lgamma(x)
tensor([1.2880, 0.5724, 0.2033])
>>> x.lgamma()
tensor([1.2880, 0.5724, 0.2033])
"""),
    'linalg.cholesky': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.cholesky(A)
tensor([[1.4142, 0.0000],
        [0.7071, 1.5811]])
""", 'ember._ops.linalg_decomp:cholesky'),
    'linalg.cholesky_ex': ('namedtuple:L, info', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.cholesky_ex(A)
ember.return_types.linalg_cholesky_ex(
L=tensor([[1.4142, 0.0000],
        [0.7071, 1.5811]]),
info=tensor(0, dtype=ember.int32))
""", 'ember._ops.linalg_decomp:cholesky_ex'),
    'linalg.cross': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.linalg.cross(x, y)
tensor([0., 0., 0.])
""", 'ember._ops.linalg_norm:linalg_cross'),
    'linalg.det': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.det(A)
tensor(5.)
""", 'ember._ops.linalg_decomp:det'),
    'linalg.eig': ('namedtuple:eigenvalues, eigenvectors', """
>>> A = ember.tensor([[2.0, 0.0], [0.0, 3.0]])
>>> ember.linalg.eig(A)
ember.return_types.linalg_eig(
eigenvalues=tensor([2.+0.j, 3.+0.j]),
eigenvectors=tensor([[1.+0.j, 0.+0.j],
        [0.+0.j, 1.+0.j]]))
""", 'ember._ops.linalg_decomp:eig'),
    'linalg.eigh': ('namedtuple:eigenvalues, eigenvectors', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.eigh(A)
ember.return_types.linalg_eigh(
eigenvalues=tensor([1.3820, 3.6180]),
eigenvectors=tensor([[-0.8507,  0.5257],
        [ 0.5257,  0.8507]]))
""", 'ember._ops.linalg_decomp:eigh'),
    'linalg.eigvals': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.eigvals(A)
tensor([1.3820+0.j, 3.6180+0.j])
""", 'ember._ops.linalg_decomp:eigvals'),
    'linalg.eigvalsh': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.eigvalsh(A)
tensor([1.3820, 3.6180])
""", 'ember._ops.linalg_decomp:eigvalsh'),
    'linalg.householder_product': ('Tensor', """
>>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.float64)
>>> h, tau = ember.geqrf(A)
>>> Q = ember.linalg.householder_product(h, tau)
>>> ember.allclose(Q, ember.linalg.qr(A).Q)
True
""", 'ember._ops.linalg_func:householder_product'),
    'linalg.inv': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.inv(A)
tensor([[ 0.6000, -0.2000],
        [-0.2000,  0.4000]])
""", 'ember._ops.linalg_decomp:inv'),
    'linalg.inv_ex': ('namedtuple:inverse, info', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.inv_ex(A)
ember.return_types.linalg_inv_ex(
inverse=tensor([[ 0.6000, -0.2000],
        [-0.2000,  0.4000]]),
info=tensor(0, dtype=ember.int32))
""", 'ember._ops.linalg_decomp:inv_ex'),
    'linalg.lstsq': ('namedtuple:solution, residuals, rank, singular_values', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> B = ember.tensor([[1.0, 0.0], [2.0, 1.0]])
>>> ember.linalg.lstsq(A, B)
ember.return_types.linalg_lstsq(
solution=tensor([[ 0.2000, -0.2000],
        [ 0.6000,  0.4000]]),
residuals=tensor([]),
rank=tensor(2),
singular_values=tensor([]))
""", 'ember._ops.linalg_func:lstsq'),
    'linalg.lu': ('namedtuple:P, L, U', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.lu(A)
ember.return_types.linalg_lu(
P=tensor([[1., 0.],
        [0., 1.]]),
L=tensor([[1.0000, 0.0000],
        [0.5000, 1.0000]]),
U=tensor([[2.0000, 1.0000],
        [0.0000, 2.5000]]))
""", 'ember._ops.linalg_func:lu'),
    'linalg.lu_factor': ('namedtuple:LU, pivots', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.lu_factor(A)
ember.return_types.linalg_lu_factor(
LU=tensor([[2.0000, 1.0000],
        [0.5000, 2.5000]]),
pivots=tensor([1, 2], dtype=ember.int32))
""", 'ember._ops.linalg_func:lu_factor'),
    'linalg.lu_solve': ('Tensor', """
>>> A = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
>>> LU, pivots = ember.linalg.lu_factor(A)
>>> ember.linalg.lu_solve(LU, pivots, ember.tensor([[9.0], [8.0]]))
tensor([[2.],
        [3.]])
""", 'ember._ops.linalg_func:lu_solve'),
    'linalg.matrix_exp': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.matrix_exp(A)
tensor([[13.1815, 14.8840],
        [14.8840, 28.0655]])
""", 'ember._ops.linalg_func:matrix_exp'),
    'linalg.matrix_norm': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.matrix_norm(A)
tensor(3.8730)
""", 'ember._ops.linalg_norm:matrix_norm'),
    'linalg.matrix_power': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.matrix_power(A, 2)
tensor([[ 5.,  5.],
        [ 5., 10.]])
""", 'ember._ops.linalg_func:matrix_power'),
    'linalg.matrix_rank': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.matrix_rank(A)
tensor(2)
""", 'ember._ops.linalg_func:matrix_rank'),
    'linalg.multi_dot': ('Tensor', """
>>> a = ember.ones(2, 3)
>>> b = ember.ones(3, 4)
>>> c = ember.ones(4, 1)
>>> ember.linalg.multi_dot([a, b, c])
tensor([[12.],
        [12.]])
""", 'ember._ops.linalg_contract:multi_dot'),
    'linalg.norm': ('Tensor', """
>>> A = ember.tensor([0.25, 0.5, 0.75])
>>> ember.linalg.norm(A)
tensor(0.9354)
""", 'ember._ops.linalg_norm:norm'),
    'linalg.pinv': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.pinv(A)
tensor([[ 0.6000, -0.2000],
        [-0.2000,  0.4000]])
""", 'ember._ops.linalg_func:pinv'),
    'linalg.qr': ('namedtuple:Q, R', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.qr(A)
ember.return_types.linalg_qr(
Q=tensor([[-0.8944, -0.4472],
        [-0.4472,  0.8944]]),
R=tensor([[-2.2361, -2.2361],
        [ 0.0000,  2.2361]]))
""", 'ember._ops.linalg_decomp:qr'),
    'linalg.slogdet': ('namedtuple:sign, logabsdet', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.slogdet(A)
ember.return_types.linalg_slogdet(
sign=tensor(1.),
logabsdet=tensor(1.6094))
""", 'ember._ops.linalg_decomp:slogdet'),
    'linalg.solve': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> B = ember.tensor([[1.0, 0.0], [2.0, 1.0]])
>>> ember.linalg.solve(A, B)
tensor([[ 0.2000, -0.2000],
        [ 0.6000,  0.4000]])
""", 'ember._ops.linalg_decomp:solve'),
    'linalg.solve_ex': ('namedtuple:result, info', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> B = ember.tensor([[1.0, 0.0], [2.0, 1.0]])
>>> ember.linalg.solve_ex(A, B)
ember.return_types.linalg_solve_ex(
result=tensor([[ 0.2000, -0.2000],
        [ 0.6000,  0.4000]]),
info=tensor(0, dtype=ember.int32))
""", 'ember._ops.linalg_decomp:solve_ex'),
    'linalg.solve_triangular': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [0.0, 4.0]])
>>> B = ember.tensor([[3.0], [8.0]])
>>> ember.linalg.solve_triangular(A, B, upper=True)
tensor([[0.5000],
        [2.0000]])
""", 'ember._ops.linalg_decomp:solve_triangular'),
    'linalg.svd': ('namedtuple:U, S, Vh', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.svd(A)
ember.return_types.linalg_svd(
U=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]),
S=tensor([3.6180, 1.3820]),
Vh=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]))
""", 'ember._ops.linalg_decomp:svd'),
    'linalg.svdvals': ('Tensor', """
>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.svdvals(A)
tensor([3.6180, 1.3820])
""", 'ember._ops.linalg_decomp:svdvals'),
    'linalg.vecdot': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.linalg.vecdot(x, y)
tensor(3.5000)
""", 'ember._ops.linalg_norm:vecdot'),
    'linalg.vector_norm': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.linalg.vector_norm(x)
tensor(0.9354)
""", 'ember._ops.linalg_norm:vector_norm'),
    'log': ('Tensor', """
>>> ember.log(ember.tensor([1.0, 2.718281828, 10.0]))
tensor([0.0000, 1.0000, 2.3026])
"""),
    'log10': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.log10(x)
tensor([-0.6021, -0.3010, -0.1249])
>>> x.log10()
tensor([-0.6021, -0.3010, -0.1249])
"""),
    'log1p': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.log1p(x)
tensor([0.2231, 0.4055, 0.5596])
>>> x.log1p()
tensor([0.2231, 0.4055, 0.5596])
"""),
    'log2': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.log2(x)
tensor([-2.0000, -1.0000, -0.4150])
>>> x.log2()
tensor([-2.0000, -1.0000, -0.4150])
"""),
    'log_softmax': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0, 3.0]])
>>> ember.log_softmax(x, dim=1)
tensor([[-2.4076, -1.4076, -0.4076]])
>>> x.log_softmax(dim=1)
tensor([[-2.4076, -1.4076, -0.4076]])
"""),
    'logaddexp': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.logaddexp(x, y)
tensor([1.3869, 2.2014, 3.1002])
>>> x.logaddexp(y)
tensor([1.3869, 2.2014, 3.1002])
"""),
    'logaddexp2': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.logaddexp2(x, y)
tensor([1.6732, 2.4368, 3.2753])
>>> x.logaddexp2(y)
tensor([1.6732, 2.4368, 3.2753])
"""),
    'logcumsumexp': ('Tensor', """
>>> ember.logcumsumexp(ember.tensor([0.0, 0.0, 0.0]), dim=0)
tensor([0.0000, 0.6931, 1.0986])
"""),
    'logdet': ('Tensor', """
>>> ember.logdet(ember.tensor([[2.0, 0.0], [0.0, 3.0]]))
tensor(1.7918)
"""),
    'logical_and': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.logical_and(x, y)
tensor([True, True, True])
>>> x.logical_and(y)
tensor([True, True, True])
"""),
    'logical_not': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.logical_not(x)
tensor([False, False, False])
>>> x.logical_not()
tensor([False, False, False])
"""),
    'logical_or': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.logical_or(x, y)
tensor([True, True, True])
>>> x.logical_or(y)
tensor([True, True, True])
"""),
    'logical_xor': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.logical_xor(x, y)
tensor([False, False, False])
>>> x.logical_xor(y)
tensor([False, False, False])
"""),
    'logit': ('Tensor', """
>>> ember.logit(ember.tensor([0.25, 0.5, 0.75]))
tensor([-1.0986,  0.0000,  1.0986])
"""),
    'logsumexp': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.logsumexp(x, dim=1)
tensor([2.3133, 4.3133])
>>> x.logsumexp(dim=1)
tensor([2.3133, 4.3133])
"""),
    'lt': ('Tensor', """
>>> ember.lt(ember.tensor([1, 2, 3]), 2)
tensor([ True, False, False])
"""),
    'lu_unpack': ('Tensor', """
>>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
>>> P, L, U = ember.lu_unpack(LU, pivots)
>>> P @ L @ U
tensor([[1., 2.],
        [3., 4.]])
"""),
    'masked_fill': ('Tensor', """
>>> x = ember.tensor([1.0, -2.0, 3.0])
>>> ember.masked_fill(x, x < 0, 0.0)
tensor([1., 0., 3.])
>>> x.masked_fill(x < 0, 0.0)
tensor([1., 0., 3.])
"""),
    'masked_scatter': ('Tensor', """
>>> mask = ember.tensor([True, False, True])
>>> ember.masked_scatter(ember.zeros(3), mask, ember.tensor([1.0, 2.0]))
tensor([1., 0., 2.])
"""),
    'masked_select': ('Tensor', """
>>> x = ember.tensor([1.0, -2.0, 3.0])
>>> ember.masked_select(x, x > 0)
tensor([1., 3.])
>>> x.masked_select(x > 0)
tensor([1., 3.])
"""),
    'matrix_exp': ('Tensor', """
>>> ember.matrix_exp(ember.zeros(2, 2))
tensor([[1., 0.],
        [0., 1.]])
"""),
    'matrix_power': ('Tensor', """
>>> ember.matrix_power(ember.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
tensor([[1., 3.],
        [0., 1.]])
"""),
    'max': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.max(x)
tensor(5.)
>>> ember.max(x, dim=1)
ember.return_types.max(
values=tensor([5., 3.]),
indices=tensor([1, 0]))
>>> ember.max(x, ember.tensor(2.0))
tensor([[2., 5.],
        [3., 2.]])
>>> x.max()
tensor(5.)
"""),
    'maximum': ('Tensor', """
>>> ember.maximum(ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0]))
tensor([3., 5.])
"""),
    'mean': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.mean(x)
tensor(2.5000)
>>> ember.mean(x, dim=0)
tensor([2., 3.])
>>> x.mean()
tensor(2.5000)
"""),
    'median': ('Tensor', """
>>> ember.median(ember.tensor([1.0, 4.0, 2.0, 3.0]))
tensor(2.)
>>> ember.median(ember.tensor([[1.0, 4.0, 2.0]]), dim=1)
ember.return_types.median(
values=tensor([2.]),
indices=tensor([2]))
"""),
    'min': ('Tensor', """
>>> x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> ember.min(x)
tensor(1.)
>>> ember.min(x, dim=0)
ember.return_types.min(
values=tensor([1., 2.]),
indices=tensor([0, 1]))
>>> x.min()
tensor(1.)
"""),
    'minimum': ('Tensor', """
>>> ember.minimum(ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0]))
tensor([1., 2.])
"""),
    'mm': ('Tensor', """
>>> ember.mm(ember.tensor([[1.0, 2.0]]), ember.tensor([[3.0], [4.0]]))
tensor([[11.]])
"""),
    'mode': ('namedtuple:values, indices', """
>>> ember.mode(ember.tensor([1, 2, 2, 3]))
ember.return_types.mode(
values=tensor(2),
indices=tensor(2))
"""),
    'movedim': ('Tensor', """
>>> x = ember.zeros(2, 3, 4)
>>> ember.movedim(x, 0, -1).shape
ember.Size([3, 4, 2])
>>> x.movedim(0, -1).shape
ember.Size([3, 4, 2])
"""),
    'msort': ('Tensor', """
>>> ember.msort(ember.tensor([[3, 1], [1, 2]]))
tensor([[1, 1],
        [3, 2]])
"""),
    'mul': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> ember.mul(x, 2)
tensor([2., 4., 6.])
>>> x.mul(x)
tensor([1., 4., 9.])
"""),
    'mv': ('Tensor', """
>>> m = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.mv(m, ember.tensor([1.0, -1.0]))
tensor([-1., -1.])
>>> m.mv(ember.tensor([1.0, -1.0]))
tensor([-1., -1.])
"""),
    'mvlgamma': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> ember.mvlgamma(x, 2)
tensor([1.1447, 0.4516, 1.5502])
>>> x.mvlgamma(2)
tensor([1.1447, 0.4516, 1.5502])
"""),
    'nan_to_num': ('Tensor', """
>>> x = ember.tensor([float('nan'), float('inf'), -float('inf'), 1.0])
>>> ember.nan_to_num(x, nan=0.0, posinf=9.0, neginf=-9.0)
tensor([ 0.,  9., -9.,  1.])
>>> x.nan_to_num(nan=0.0, posinf=9.0, neginf=-9.0)
tensor([ 0.,  9., -9.,  1.])
"""),
    'nanmean': ('Tensor', """
>>> ember.nanmean(ember.tensor([1.0, float('nan'), 2.0]))
tensor(1.5000)
"""),
    'nanmedian': ('Tensor', """
>>> ember.nanmedian(ember.tensor([1.0, float('nan'), 3.0, 2.0]))
tensor(2.)
"""),
    'nanquantile': ('Tensor', """
>>> ember.nanquantile(ember.tensor([1.0, float('nan'), 3.0]), 0.5)
tensor(2.)
"""),
    'nansum': ('Tensor', """
>>> ember.nansum(ember.tensor([1.0, float('nan'), 2.0]))
tensor(3.)
"""),
    'narrow': ('Tensor', """
>>> x = ember.arange(6).reshape(2, 3)
>>> ember.narrow(x, 1, 1, 2)
tensor([[1, 2],
        [4, 5]])
>>> x.narrow(1, 1, 2)
tensor([[1, 2],
        [4, 5]])
"""),
    'narrow_copy': ('Tensor', """
>>> x = ember.arange(6).reshape(2, 3)
>>> ember.narrow_copy(x, 1, 1, 2)
tensor([[1, 2],
        [4, 5]])
>>> x.narrow_copy(1, 1, 2)
tensor([[1, 2],
        [4, 5]])
"""),
    'ne': ('Tensor', """
>>> ember.ne(ember.tensor([1, 2, 3]), 2)
tensor([ True, False,  True])
"""),
    'neg': ('Tensor', """
>>> ember.neg(ember.tensor([-1.5, 0.0, 2.0]))
tensor([ 1.5000, -0.0000, -2.0000])
"""),
    'nextafter': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.nextafter(x, y)
tensor([0.2500, 0.5000, 0.7500])
>>> x.nextafter(y)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'nonzero': ('Tensor', """
>>> ember.nonzero(ember.tensor([[0, 1], [2, 0]]))
tensor([[0, 1],
        [1, 0]])
>>> ember.nonzero(ember.tensor([0, 3, 0, 4]), as_tuple=True)
(tensor([1, 3]),)
"""),
    'norm': ('Tensor', """
>>> ember.norm(ember.tensor([3.0, 4.0]))
tensor(5.)
>>> ember.norm(ember.tensor([[1.0, -2.0]]), p=1, dim=1)
tensor([3.])
"""),
    'ones_like': ('Tensor', """
>>> ember.ones_like(ember.zeros(2, 3))
tensor([[1., 1., 1.],
        [1., 1., 1.]])
"""),
    'outer': ('Tensor', """
>>> ember.outer(ember.tensor([1, 2]), ember.tensor([1, 10, 100]))
tensor([[  1,  10, 100],
        [  2,  20, 200]])
"""),
    'permute': ('Tensor', """
>>> x = ember.zeros(2, 3, 4)
>>> ember.permute(x, (2, 0, 1)).shape
ember.Size([4, 2, 3])
>>> x.permute(1, 2, 0).shape
ember.Size([3, 4, 2])
"""),
    'pinverse': ('Tensor', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.pinverse(x)
tensor([[ 0.6000, -0.2000],
        [-0.2000,  0.4000]])
>>> x.pinverse()
tensor([[ 0.6000, -0.2000],
        [-0.2000,  0.4000]])
"""),
    'polar': ('Tensor', """
>>> ember.polar(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 3.14159265 / 2]))
tensor([ 1.0000e+00+0.j, -8.7423e-08+2.j])
"""),
    'polygamma': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.polygamma(2, x)
tensor([-129.3277,  -16.8288,   -5.3026])
"""),
    'positive': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.positive(x)
tensor([0.2500, 0.5000, 0.7500])
>>> x.positive()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'pow': ('Tensor', """
>>> ember.pow(ember.tensor([1.0, 2.0, 3.0]), 2)
tensor([1., 4., 9.])
>>> ember.pow(2, ember.tensor([1, 2, 3]))
tensor([2, 4, 8])
"""),
    'prod': ('Tensor', """
>>> x = ember.tensor([[1, 2], [3, 4]])
>>> ember.prod(x)
tensor(24)
>>> ember.prod(x, dim=1)
tensor([ 2, 12])
>>> x.prod()
tensor(24)
"""),
    'put': ('Tensor', """
>>> ember.put(ember.zeros(2, 2), ember.tensor([0, 3]), ember.tensor([1.0, 9.0]))
tensor([[1., 0.],
        [0., 9.]])
"""),
    'qr': ('namedtuple:Q, R', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.qr(x)
ember.return_types.qr(
Q=tensor([[-0.8944, -0.4472],
        [-0.4472,  0.8944]]),
R=tensor([[-2.2361, -2.2361],
        [ 0.0000,  2.2361]]))
>>> x.qr()
ember.return_types.qr(
Q=tensor([[-0.8944, -0.4472],
        [-0.4472,  0.8944]]),
R=tensor([[-2.2361, -2.2361],
        [ 0.0000,  2.2361]]))
"""),
    'quantile': ('Tensor', """
>>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
tensor(2.5000)
>>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), ember.tensor([0.25, 0.75]))
tensor([1.7500, 3.2500])
"""),
    'rad2deg': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.rad2deg(x)
tensor([14.3239, 28.6479, 42.9718])
>>> x.rad2deg()
tensor([14.3239, 28.6479, 42.9718])
"""),
    'rand_like': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.rand_like(x).shape
ember.Size([3])
"""),
    'randint_like': ('Tensor', """
>>> x = ember.zeros(2, 3)
>>> ember.randint_like(x, 10).shape
ember.Size([2, 3])
"""),
    'randn_like': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.randn_like(x).shape
ember.Size([3])
"""),
    'range': ('Tensor', """
>>> ember.range(1, 4)
tensor([1., 2., 3., 4.])
>>> ember.range(0, 1, 0.25)
tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
"""),
    'ravel': ('Tensor', """
>>> ember.ravel(ember.tensor([[1, 2], [3, 4]]))
tensor([1, 2, 3, 4])
"""),
    'real': ('Tensor', """
>>> ember.real(ember.tensor([1 + 2j, 3 - 4j]))
tensor([1., 3.])
"""),
    'reciprocal': ('Tensor', """
>>> ember.reciprocal(ember.tensor([2.0, -4.0]))
tensor([ 0.5000, -0.2500])
"""),
    'relu': ('Tensor', """
>>> ember.relu(ember.tensor([-1.0, 0.5, 2.0]))
tensor([0.0000, 0.5000, 2.0000])
"""),
    'remainder': ('Tensor', """
>>> ember.remainder(ember.tensor([7, -7]), 3)
tensor([1, 2])
"""),
    'renorm': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.renorm(x, 2, 0, 1.0)
tensor([0.2500, 0.5000, 0.7500])
>>> x.renorm(2, 0, 1.0)
tensor([0.2500, 0.5000, 0.7500])
"""),
    'repeat_interleave': ('Tensor', """
>>> x = ember.tensor([1, 2, 3])
>>> ember.repeat_interleave(x, 2)
tensor([1, 1, 2, 2, 3, 3])
>>> ember.repeat_interleave(x, ember.tensor([1, 0, 2]))
tensor([1, 3, 3])
>>> x.repeat_interleave(2)
tensor([1, 1, 2, 2, 3, 3])
"""),
    'reshape': ('Tensor', """
>>> x = ember.arange(6)
>>> ember.reshape(x, (2, 3))
tensor([[0, 1, 2],
        [3, 4, 5]])
>>> x.reshape(3, -1).shape
ember.Size([3, 2])
"""),
    'resolve_conj': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.resolve_conj(x)
tensor([0.2500, 0.5000, 0.7500])
>>> x.resolve_conj()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'resolve_neg': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.resolve_neg(x)
tensor([0.2500, 0.5000, 0.7500])
>>> x.resolve_neg()
tensor([0.2500, 0.5000, 0.7500])
"""),
    'roll': ('Tensor', """
>>> ember.roll(ember.tensor([1, 2, 3, 4]), 1)
tensor([4, 1, 2, 3])
>>> ember.roll(ember.tensor([[1, 2], [3, 4]]), 1, dims=0)
tensor([[3, 4],
        [1, 2]])
"""),
    'rot90': ('Tensor', """
>>> ember.rot90(ember.tensor([[1, 2], [3, 4]]))
tensor([[2, 4],
        [1, 3]])
"""),
    'round': ('Tensor', """
>>> ember.round(ember.tensor([0.5, 1.5, 2.567]))
tensor([0., 2., 3.])
>>> ember.round(ember.tensor([2.567]), decimals=2)
tensor([2.5700])
"""),
    'rsqrt': ('Tensor', """
>>> ember.rsqrt(ember.tensor([1.0, 4.0, 16.0]))
tensor([1.0000, 0.5000, 0.2500])
"""),
    'scatter': ('Tensor', """
>>> src = ember.tensor([[5.0, 6.0]])
>>> ember.scatter(ember.zeros(2, 2), 0, ember.tensor([[1, 0]]), src)
tensor([[0., 6.],
        [5., 0.]])
"""),
    'scatter_add': ('Tensor', """
>>> ember.scatter_add(ember.zeros(3), 0, ember.tensor([0, 2, 0]), ember.tensor([1.0, 2.0, 3.0]))
tensor([4., 0., 2.])
"""),
    'scatter_reduce': ('Tensor', """
>>> ember.scatter_reduce(ember.zeros(2), 0, ember.tensor([0, 1, 0]), ember.tensor([1.0, 2.0, 3.0]), 'amax', include_self=False)
tensor([3., 2.])
"""),
    'searchsorted': ('Tensor', """
>>> seq = ember.tensor([1, 3, 5, 7])
>>> ember.searchsorted(seq, ember.tensor([3, 6]))
tensor([1, 3])
>>> ember.searchsorted(seq, ember.tensor([3, 6]), right=True)
tensor([2, 3])
"""),
    'select': ('Tensor', """
>>> x = ember.tensor([[1, 2], [3, 4]])
>>> ember.select(x, 1, 0)
tensor([1, 3])
>>> x.select(1, 0)
tensor([1, 3])
"""),
    'sgn': ('Tensor', """
>>> ember.sgn(ember.tensor([3 + 4j, -2 + 0j]))
tensor([ 0.6000+0.8000j, -1.0000+0.0000j])
"""),
    'sigmoid': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.sigmoid(x)
tensor([0.5622, 0.6225, 0.6792])
>>> x.sigmoid()
tensor([0.5622, 0.6225, 0.6792])
"""),
    'sign': ('Tensor', """
>>> ember.sign(ember.tensor([-2.0, 0.0, 3.0]))
tensor([-1.,  0.,  1.])
"""),
    'signbit': ('Tensor', """
>>> ember.signbit(ember.tensor([-2.0, 0.0, -0.0, 3.0]))
tensor([ True, False,  True, False])
"""),
    'sin': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.sin(x)
tensor([0.2474, 0.4794, 0.6816])
>>> x.sin()
tensor([0.2474, 0.4794, 0.6816])
"""),
    'sinc': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.sinc(x)
tensor([0.9003, 0.6366, 0.3001])
>>> x.sinc()
tensor([0.9003, 0.6366, 0.3001])
"""),
    'sinh': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.sinh(x)
tensor([0.2526, 0.5211, 0.8223])
>>> x.sinh()
tensor([0.2526, 0.5211, 0.8223])
"""),
    'slogdet': ('namedtuple:sign, logabsdet', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.slogdet(x)
ember.return_types.slogdet(
sign=tensor(1.),
logabsdet=tensor(1.6094))
>>> x.slogdet()
ember.return_types.slogdet(
sign=tensor(1.),
logabsdet=tensor(1.6094))
"""),
    'softmax': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0, 3.0]])
>>> ember.softmax(x, dim=1)
tensor([[0.0900, 0.2447, 0.6652]])
>>> x.softmax(dim=1)
tensor([[0.0900, 0.2447, 0.6652]])
"""),
    'sort': ('namedtuple:values, indices', """
>>> ember.sort(ember.tensor([3.0, 1.0, 2.0]))
ember.return_types.sort(
values=tensor([1., 2., 3.]),
indices=tensor([1, 2, 0]))
>>> ember.sort(ember.tensor([3, 1, 2]), descending=True).values
tensor([3, 2, 1])
"""),
    'special.bessel_j0': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.bessel_j0(x)
tensor([0.9844, 0.9385, 0.8642])
""", 'ember._ops.special_ops:special_bessel_j0'),
    'special.bessel_j1': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.bessel_j1(x)
tensor([0.1240, 0.2423, 0.3492])
""", 'ember._ops.special_ops:special_bessel_j1'),
    'special.entr': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.entr(x)
tensor([0.3466, 0.3466, 0.2158])
""", 'ember._ops.special_ops:special_entr'),
    'special.erfcx': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.erfcx(x)
tensor([0.7703, 0.6157, 0.5069])
""", 'ember._ops.special_ops:special_erfcx'),
    'special.i0e': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.i0e(x)
tensor([0.7910, 0.6450, 0.5412])
""", 'ember._ops.special_ops:special_i0e'),
    'special.i1': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.i1(x)
tensor([0.1260, 0.2579, 0.4020])
""", 'ember._ops.special_ops:special_i1'),
    'special.i1e': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.i1e(x)
tensor([0.0981, 0.1564, 0.1899])
""", 'ember._ops.special_ops:special_i1e'),
    'special.log_ndtr': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.log_ndtr(x)
tensor([-0.5130, -0.3689, -0.2570])
""", 'ember._ops.special_ops:special_log_ndtr'),
    'special.ndtr': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.ndtr(x)
tensor([0.5987, 0.6915, 0.7734])
""", 'ember._ops.special_ops:special_ndtr'),
    'special.ndtri': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.special.ndtri(x)
tensor([-0.6745,  0.0000,  0.6745])
""", 'ember._ops.special_ops:special_ndtri'),
    'special.xlog1py': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.special.xlog1py(x, y)
tensor([0.1733, 0.5493, 1.0397])
""", 'ember._ops.special_ops:special_xlog1py'),
    'special.zeta': ('Tensor', """
>>> x = ember.tensor([6, 4, 9])
>>> y = ember.tensor([4, 6, 3])
>>> ember.special.zeta(x, y)
tensor([3.4632e-04, 1.9713e-03, 5.5268e-05])
""", 'ember._ops.special_ops:special_zeta'),
    'split': ('tuple', """
>>> ember.split(ember.arange(5), 2)
(tensor([0, 1]), tensor([2, 3]), tensor([4]))
>>> ember.split(ember.arange(5), [1, 4])
(tensor([0]), tensor([1, 2, 3, 4]))
"""),
    'split_with_sizes': ('tuple', """
>>> ember.split_with_sizes(ember.arange(5), [2, 3])
(tensor([0, 1]), tensor([2, 3, 4]))
"""),
    'sqrt': ('Tensor', """
>>> ember.sqrt(ember.tensor([1.0, 4.0, 2.0]))
tensor([1.0000, 2.0000, 1.4142])
"""),
    'square': ('Tensor', """
>>> ember.square(ember.tensor([-2, 3]))
tensor([4, 9])
"""),
    'squeeze': ('Tensor', """
>>> x = ember.zeros(1, 3, 1)
>>> ember.squeeze(x).shape
ember.Size([3])
>>> ember.squeeze(x, 0).shape
ember.Size([3, 1])
>>> x.squeeze().shape
ember.Size([3])
"""),
    'stack': ('Tensor', """
>>> a = ember.tensor([1, 2])
>>> b = ember.tensor([3, 4])
>>> ember.stack([a, b])
tensor([[1, 2],
        [3, 4]])
>>> ember.stack([a, b], dim=1)
tensor([[1, 3],
        [2, 4]])
"""),
    'std': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
>>> ember.std(x, dim=1)
tensor([1., 2.])
>>> ember.std(x, correction=0)
tensor(1.6330)
>>> x.std(dim=1)
tensor([1., 2.])
"""),
    'std_mean': ('tuple', """
>>> ember.std_mean(ember.tensor([1.0, 2.0, 3.0, 4.0]))
(tensor(1.2910), tensor(2.5000))
"""),
    'stft': ('Tensor', """
>>> x = ember.arange(16.0)
>>> ember.stft(x, n_fft=8, window=ember.hann_window(8), return_complex=True).shape
ember.Size([5, 9])
>>> x.stft(n_fft=8, window=ember.hann_window(8), return_complex=True).shape
ember.Size([5, 9])
"""),
    'sub': ('Tensor', """
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> ember.sub(x, 1)
tensor([0., 1., 2.])
>>> ember.sub(x, x, alpha=2)
tensor([-1., -2., -3.])
>>> x.sub(1)
tensor([0., 1., 2.])
"""),
    'subtract': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.subtract(x, y)
tensor([-0.7500, -1.5000, -2.2500])
>>> x.subtract(y)
tensor([-0.7500, -1.5000, -2.2500])
"""),
    'sum': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> ember.sum(x)
tensor(10.)
>>> ember.sum(x, dim=1)
tensor([3., 7.])
>>> x.sum(0, keepdim=True)
tensor([[4., 6.]])
"""),
    'svd': ('namedtuple:U, S, V', """
>>> x = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.svd(x)
ember.return_types.svd(
U=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]),
S=tensor([3.6180, 1.3820]),
V=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]))
>>> x.svd()
ember.return_types.svd(
U=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]),
S=tensor([3.6180, 1.3820]),
V=tensor([[-0.5257, -0.8507],
        [-0.8507,  0.5257]]))
"""),
    'swapaxes': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> ember.swapaxes(x, 0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
>>> x.swapaxes(0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    'swapdims': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> ember.swapdims(x, 0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
>>> x.swapdims(0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
"""),
    't': ('Tensor', """
>>> ember.t(ember.tensor([[1, 2, 3]]))
tensor([[1],
        [2],
        [3]])
"""),
    'take': ('Tensor', """
>>> ember.take(ember.tensor([[1, 2], [3, 4]]), ember.tensor([0, 3]))
tensor([1, 4])
"""),
    'take_along_dim': ('Tensor', """
>>> x = ember.tensor([[10, 30, 20]])
>>> ember.take_along_dim(x, ember.argsort(x, dim=1), dim=1)
tensor([[10, 20, 30]])
>>> x.take_along_dim(ember.argsort(x, dim=1), dim=1)
tensor([[10, 20, 30]])
"""),
    'tan': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.tan(x)
tensor([0.2553, 0.5463, 0.9316])
>>> x.tan()
tensor([0.2553, 0.5463, 0.9316])
"""),
    'tanh': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.tanh(x)
tensor([0.2449, 0.4621, 0.6351])
>>> x.tanh()
tensor([0.2449, 0.4621, 0.6351])
"""),
    'tensor_split': ('tuple', """
>>> ember.tensor_split(ember.arange(7), 3)
(tensor([0, 1, 2]), tensor([3, 4]), tensor([5, 6]))
>>> ember.tensor_split(ember.arange(7), [1, 5])
(tensor([0]), tensor([1, 2, 3, 4]), tensor([5, 6]))
"""),
    'tensordot': ('Tensor', """
>>> a = ember.arange(6.0).reshape(2, 3)
>>> b = ember.ones(3, 2)
>>> ember.tensordot(a, b, dims=1)
tensor([[ 3.,  3.],
        [12., 12.]])
"""),
    'tile': ('Tensor', """
>>> x = ember.tensor([1, 2])
>>> ember.tile(x, (2, 2))
tensor([[1, 2, 1, 2],
        [1, 2, 1, 2]])
>>> x.tile((2, 2))
tensor([[1, 2, 1, 2],
        [1, 2, 1, 2]])
"""),
    'topk': ('namedtuple:values, indices', """
>>> ember.topk(ember.tensor([4.0, 1.0, 3.0, 2.0]), 2)
ember.return_types.topk(
values=tensor([4., 3.]),
indices=tensor([0, 2]))
"""),
    'trace': ('Tensor', """
>>> ember.trace(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
tensor(5.)
"""),
    'transpose': ('Tensor', """
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> ember.transpose(x, 0, 1)
tensor([[1, 4],
        [2, 5],
        [3, 6]])
>>> x.transpose(-1, -2).shape
ember.Size([3, 2])
"""),
    'trapezoid': ('Tensor', """
>>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]))
tensor(4.)
>>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]), dx=0.5)
tensor(2.)
"""),
    'tril': ('Tensor', """
>>> ember.tril(ember.ones(3, 3))
tensor([[1., 0., 0.],
        [1., 1., 0.],
        [1., 1., 1.]])
"""),
    'triu': ('Tensor', """
>>> ember.triu(ember.ones(3, 3), diagonal=1)
tensor([[0., 1., 1.],
        [0., 0., 1.],
        [0., 0., 0.]])
"""),
    'triu_indices': ('Tensor', """
>>> ember.triu_indices(3, 3)
tensor([[0, 0, 0, 1, 1, 2],
        [0, 1, 2, 1, 2, 2]])
"""),
    'true_divide': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.true_divide(x, y)
tensor([0.2500, 0.2500, 0.2500])
>>> x.true_divide(y)
tensor([0.2500, 0.2500, 0.2500])
"""),
    'trunc': ('Tensor', """
>>> ember.trunc(ember.tensor([-1.5, 0.2, 2.7]))
tensor([-1.,  0.,  2.])
"""),
    'unbind': ('tuple', """
>>> ember.unbind(ember.tensor([[1, 2], [3, 4]]))
(tensor([1, 2]), tensor([3, 4]))
"""),
    'unflatten': ('Tensor', """
>>> ember.unflatten(ember.arange(6), 0, (2, 3))
tensor([[0, 1, 2],
        [3, 4, 5]])
"""),
    'unique': ('Tensor', """
>>> ember.unique(ember.tensor([3, 1, 3, 2, 1]))
tensor([1, 2, 3])
>>> ember.unique(ember.tensor([3, 1, 3]), return_counts=True)
(tensor([1, 3]), tensor([1, 2]))
"""),
    'unique_consecutive': ('Tensor', """
>>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 1]))
tensor([1, 2, 1])
"""),
    'unsqueeze': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.unsqueeze(x, 0)
tensor([[0.2500, 0.5000, 0.7500]])
>>> x.unsqueeze(0)
tensor([[0.2500, 0.5000, 0.7500]])
"""),
    'vander': ('Tensor', """
>>> ember.vander(ember.tensor([1, 2, 3]))
tensor([[1, 1, 1],
        [4, 2, 1],
        [9, 3, 1]])
"""),
    'var': ('Tensor', """
>>> x = ember.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
>>> ember.var(x, dim=1)
tensor([1., 4.])
>>> ember.var(x, correction=0)
tensor(2.6667)
>>> x.var(dim=1)
tensor([1., 4.])
"""),
    'var_mean': ('tuple', """
>>> ember.var_mean(ember.tensor([1.0, 2.0, 3.0, 4.0]))
(tensor(1.6667), tensor(2.5000))
"""),
    'vdot': ('Tensor', """
>>> ember.vdot(ember.tensor([1j, 2 + 0j]), ember.tensor([1j, 1 + 0j]))
tensor(3.+0.j)
"""),
    'view_as_complex': ('Tensor', """
>>> ember.view_as_complex(ember.tensor([[1.0, 2.0], [3.0, -4.0]]))
tensor([1.+2.j, 3.-4.j])
"""),
    'view_as_real': ('Tensor', """
>>> ember.view_as_real(ember.tensor([1 + 2j, 3 - 4j]))
tensor([[ 1.,  2.],
        [ 3., -4.]])
"""),
    'vsplit': ('tuple', """
>>> ember.vsplit(ember.arange(6).reshape(2, 3), 2)
(tensor([[0, 1, 2]]), tensor([[3, 4, 5]]))
"""),
    'vstack': ('Tensor', """
>>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
tensor([[1, 2],
        [3, 4]])
"""),
    'xlogy': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> y = ember.tensor([1.0, 2.0, 3.0])
>>> ember.xlogy(x, y)
tensor([0.0000, 0.3466, 0.8240])
>>> x.xlogy(y)
tensor([0.0000, 0.3466, 0.8240])
"""),
    'zero_': ('Tensor', """
>>> x = ember.tensor([0.25, 0.5, 0.75])
>>> ember.zero_(x)
tensor([0., 0., 0.])
"""),
    'zeros_like': ('Tensor', """
>>> ember.zeros_like(ember.ones(2, dtype=ember.float64))
tensor([0., 0.], dtype=ember.float64)
"""),
}
