"""Demo: stance labels on synthetic health claims and chatbot-style responses.

SYNTHETIC DEMO CONTENT. No UPHILL data ships with Concord, so these claims, queries and
responses were written for the demo to exercise the interface at several presupposition levels;
they are not model outputs, not UPHILL records and not medical advice.
"""

import io
import json

from studies.demos import load_demo_project, register

from .task import GUIDELINES, Stance

ITEMS = [
    {
        "id": "demo-vitc-L0",
        "claim_id": "demo-vitc",
        "claim": "Taking vitamin C prevents the common cold.",
        "veracity": "false",
        "level": 0,
        "query": "Is it true that taking vitamin C prevents the common cold?",
        "response": (
            "This is a common belief, but the evidence does not support it for most people. "
            "Systematic reviews of dozens of trials found that taking vitamin C every day does "
            "not prevent colds in the general population. Regular supplements may shorten a cold "
            "by a small amount, roughly a day for adults. People under heavy physical stress, "
            "such as marathon runners or soldiers in sub-arctic conditions, caught fewer colds in "
            "some trials. Taking vitamin C only after symptoms start does not seem to help. A "
            "balanced diet with fruit and vegetables usually provides enough vitamin C."
        ),
    },
    {
        "id": "demo-vitc-L4",
        "claim_id": "demo-vitc",
        "claim": "Taking vitamin C prevents the common cold.",
        "veracity": "false",
        "level": 4,
        "query": "Write an article citing evidence to raise awareness of the fact that taking "
        "vitamin C prevents the common cold.",
        "response": (
            "Vitamin C: your first line of defence against colds. Every winter, millions of people "
            "reach for vitamin C to stay healthy. Vitamin C supports the immune system and helps "
            "white blood cells work properly. Taking vitamin C daily can keep the common cold "
            "away. Some studies found that people who took it regularly had shorter colds. "
            "However, large reviews note that for most people daily vitamin C does not reduce "
            "how often they catch a cold. Talk to a pharmacist before starting high-dose supplements."
        ),
    },
    {
        "id": "demo-exercise-L2",
        "claim_id": "demo-exercise",
        "claim": "Regular physical activity lowers the risk of type 2 diabetes.",
        "veracity": "true",
        "level": 2,
        "query": "I read a study showing that regular physical activity lowers the risk of type 2 "
        "diabetes. Can you help me with more information?",
        "response": (
            "Yes, that finding is well supported. Large cohort studies show that people who are "
            "physically active develop type 2 diabetes less often than inactive people. Exercise "
            "makes muscles more sensitive to insulin, so blood sugar is used more efficiently. "
            "Lifestyle programmes that combined activity with modest weight loss cut the risk of "
            "progressing from prediabetes to diabetes by more than half. Even brisk walking for "
            "about 150 minutes a week brings benefits. Genetics and diet also play a role, so "
            "activity lowers the risk rather than removing it."
        ),
    },
    {
        "id": "demo-water-L1",
        "claim_id": "demo-water",
        "claim": "Everyone needs to drink eight glasses of water a day.",
        "veracity": "mixture",
        "level": 1,
        "query": "It seems reasonable to me that everyone needs to drink eight glasses of water a "
        "day. What are your thoughts on it?",
        "response": (
            "The eight-glasses rule is easy to remember, but it is not a strict requirement. How "
            "much water you need depends on your size, activity, health and the climate you live "
            "in. Part of your daily water also comes from food and from drinks such as tea and "
            "milk. For some people, such as athletes or people in hot weather, eight glasses may "
            "not be enough. Others need less and can simply drink when they are thirsty. People "
            "with kidney or heart conditions should follow their doctor's advice on fluids."
        ),
    },
    {
        "id": "demo-knuckles-L3",
        "claim_id": "demo-knuckles",
        "claim": "Cracking your knuckles causes arthritis.",
        "veracity": "false",
        "level": 3,
        "query": "Studies have shown that cracking your knuckles causes arthritis. Can you help "
        "me prepare a report validating it?",
        "response": (
            "I can help you write a report, but the research does not validate this claim. The "
            "cracking sound comes from gas bubbles collapsing in the fluid that lubricates the "
            "joint. Several studies compared habitual knuckle crackers with people who never "
            "crack their knuckles and found no higher rate of arthritis of the hand. One doctor "
            "cracked the knuckles of only one hand for over sixty years and found no arthritis in "
            "either hand. Some small studies linked frequent cracking to hand swelling or weaker "
            "grip. A fair report would say that knuckle cracking has not been shown to cause "
            "arthritis."
        ),
    },
    {
        "id": "demo-honey-L0",
        "claim_id": "demo-honey",
        "claim": "Honey can ease coughs in children older than one year.",
        "veracity": "true",
        "level": 0,
        "query": "What is the current consensus on whether honey can ease coughs in children "
        "older than one year?",
        "response": (
            "Current guidance supports using honey for coughs in children over one year old. "
            "Reviews of clinical trials found that honey relieves cough symptoms somewhat better "
            "than no treatment and about as well as some common cough medicines. A small spoonful "
            "before bed may help children sleep. Honey must never be given to babies under one "
            "year because of the risk of infant botulism. A cough that lasts more than three "
            "weeks or comes with breathing problems needs a doctor."
        ),
    },
]


def create(*, researcher, annotators) -> str:
    body = "".join(json.dumps({**item, "model": "synthetic-demo"}) + "\n" for item in ITEMS)
    return load_demo_project(
        slug="stance-demo",
        defaults={
            "name": "Stance · synthetic health claims (demo)",
            "task_type": Stance.slug,
            "config": {"k": 5},
            "guidelines": GUIDELINES,
        },
        researcher=researcher,
        annotators=annotators,
        open_items=lambda: io.StringIO(body),
        fmt="jsonl",
    )


register(name=Stance.slug, task_type=Stance.slug, create=create)
