import markdown as markdown_lib
import nh3
from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    """Render researcher-written Markdown, then sanitise it (no scripts, no event handlers)."""
    html = markdown_lib.markdown(text or "", extensions=["extra", "sane_lists"])
    return mark_safe(nh3.clean(html))
