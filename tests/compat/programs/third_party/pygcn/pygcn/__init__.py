# From https://github.com/tkipf/pygcn (pygcn/__init__.py), commit 1600b5b748b3976413d1e307540ccc62605b4d6d, MIT License.
from __future__ import print_function
from __future__ import division

from .layers import *
from .models import *
from .utils import *