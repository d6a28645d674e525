"""Settings of ``ember.fx``: progress output of long passes (torch's names; ember's passes
print no progress bars, so both stay as torch's defaults)."""

#: hide the progress bars of long-running passes
disable_progress = True
#: print extra detail in progress bars
verbose_progress = False
