"""``configargparse`` stand-in: argparse, accepting (and ignoring) ``is_config_file``."""

import argparse


class ArgumentParser(argparse.ArgumentParser):
    def add_argument(self, *args, is_config_file=False, **kwargs):
        return super().add_argument(*args, **kwargs)
