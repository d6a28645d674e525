# From karpathy/minGPT, mingpt/__init__.py at commit 37baab71b9abea1b76ab957409a1cc2fbfba8a26 (MIT, Copyright (c) 2020 Andrej Karpathy; unchanged).
