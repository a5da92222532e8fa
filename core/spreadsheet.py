"""CSV cells that are safe to open in a spreadsheet."""

from typing import Any

# Text starting with these runs as a formula in Excel, LibreOffice and Google Sheets (OWASP CSV
# injection); dataset and annotator text must never do that in a researcher's spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """``None`` as an empty cell; text that a spreadsheet would run as a formula gets a leading
    apostrophe (shown, not evaluated). Numbers and other values pass unchanged. JSONL exports
    keep the exact text; this is for CSV only."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
