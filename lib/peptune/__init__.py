"""PepTune (chapter 18): placeholder during construction."""
from . import chem, model, schedules
