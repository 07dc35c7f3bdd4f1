"""What a check returns and how it is shown: the one verdict vocabulary, the violation kinds
and the one exit-code table (result), checked traces and the wording of every violation
(trace), text and JSON reports (report), trace files (trace_files: ITF, Perfetto) and SARIF
(sarif).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["report", "result", "sarif", "trace", "trace_files"],
    submod_attrs={
        "report": ["counterexample_depth", "first_line", "format_text", "result_to_json", "summary_of", "to_json", "warning_lines"],
        "result": ["EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_NOT_RUN", "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_USAGE", "EXIT_VIOLATION", "GPU_OUTCOME", "GPU_OUTCOMES", "JSON_SCHEMA_VERSION", "KINDS", "RECORDS", "Result", "SEVERITY", "VERDICTS", "VERDICT_EXIT", "Verdict", "WARNINGS", "worse"],
        "trace": ["Step", "Trace", "entry_text", "explain_step", "trace_from_codes"],
        "trace_files": ["to_itf", "write_trace"],
    },
)
