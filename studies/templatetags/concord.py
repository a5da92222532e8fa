import math

import markdown as markdown_lib
import nh3
from django import template
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from core.wording import fixed
from projects.crowd import flag_reason_label as reason_label
from projects.models import your_role as roles_your_role

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    """Render researcher-written Markdown, then sanitise it (no scripts, no event handlers)."""
    html = markdown_lib.markdown(text or "", extensions=["extra", "sane_lists"])
    return mark_safe(nh3.clean(html))


@register.filter
def task_type_name(slug: str) -> str:
    """The registered task type's display name (its slug -> its ``name``), in the page's
    language (each package's catalogue translates its name)."""
    from annotation import task_types

    try:
        return gettext(task_types.get(slug).name)
    except task_types.TaskTypeNotFound:
        return slug


@register.filter
def your_role(role: str) -> str:
    """ "you are an annotator" for a membership's role, in the page's language."""
    return roles_your_role(role)


@register.filter
def number(value, digits: int = 3) -> str:
    """A statistic with ``digits`` decimals; "—" when it is undefined (None, NaN, infinite)."""
    if value is None or isinstance(value, bool):
        return "—"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "—"
    return fixed(value, int(digits)) if math.isfinite(value) else "—"


@register.filter
def pace(value) -> str:
    """A ``core.pace.Pace`` (or its dict) as one line: elapsed · rate · time left."""
    from core.pace import pace_words

    return pace_words(value)


@register.filter
def ago(moment) -> str:
    """ "just now" within a minute, else "5 minutes ago" (Django's timesince)."""
    from django.utils import timezone
    from django.utils.timesince import timesince

    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment)} ago"


@register.filter
def flag_reason_label(reason: str) -> str:
    """A flag reason as the annotation page shows it: a default one in the page's language,
    one the researchers wrote as written (first letter capitalised)."""
    return reason_label(reason)


@register.filter
def english_filesize(value) -> str:
    """A size in bytes as English writes it, in the binary units the upload refusal names
    ("512 MiB", "125.6 MiB", "300 bytes"), whatever the request's language: Django's
    ``filesizeformat`` counts in 1024s but writes "MB", and follows the language."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return "0 bytes"
    if size < 1024:
        return f"{int(size)} byte{'' if int(size) == 1 else 's'}"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            break
    return f"{size:.1f}".removesuffix(".0") + f"\u00a0{unit}"
