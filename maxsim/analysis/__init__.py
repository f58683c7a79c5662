"""Static views of a decoded kernel: register-bank conflicts, operand reuse, opcode mix, control-code hazards."""

from .banks import (DEFAULT_MODEL, FFMA_PER_KSTEP, MAXAS_HEALTH_MODEL, NO_REUSE_MODEL, BankReport,
                    BankRow, BankTotals, LoopReport, ReuseModel, analyze_banks, bank_conflicts,
                    executed_bank_figures,
                    find_loops, format_bank_report, opcode_mix)
from .controls import Hazard, check_controls, format_hazards

__all__ = ["analyze_banks", "executed_bank_figures", "opcode_mix", "format_bank_report", "bank_conflicts", "find_loops",
           "BankReport", "BankRow", "BankTotals", "LoopReport", "ReuseModel", "DEFAULT_MODEL",
           "MAXAS_HEALTH_MODEL", "NO_REUSE_MODEL", "FFMA_PER_KSTEP", "check_controls", "format_hazards", "Hazard"]
