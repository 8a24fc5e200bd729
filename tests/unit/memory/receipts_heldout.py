"""A held-out set for the receipt check: plain paraphrases, written once and never tuned.

Fifty facts the user said, reworded the way a consolidating model rewords them, each with
the quote a model would copy. The set was written before the changes it measures and no
case was edited (or dropped) to make it pass: a case held wrongly stays and counts.
`bench/receipt_holds.py` prints the false holds; the test asserts they do not grow.
"""

from __future__ import annotations

from tests.unit.memory.receipts_corpus import Case, _c

_HELDOUT = [
    ("U: I work night shifts at the hospital.", "Works nights at a hospital", "I work night shifts at the hospital"),
    ("U: I'm a freelance graphic designer.", "Self-employed graphic designer", "I'm a freelance graphic designer"),
    ("U: I've been playing guitar for 15 years.", "Has played guitar for 15 years", "playing guitar for 15 years"),
    ("U: I usually have oatmeal for breakfast.", "Eats oatmeal for breakfast", "I usually have oatmeal for breakfast"),
    ("U: I hate waking up early.", "Dislikes early mornings", "I hate waking up early"),
    ("U: I take the bus to work every day.", "Commutes to work by bus", "I take the bus to work"),
    ("U: My favourite food is sushi.", "Loves sushi", "My favourite food is sushi"),
    ("U: I'm scared of flying.", "Has a fear of flying", "I'm scared of flying"),
    ("U: I wear glasses.", "Wears spectacles", "I wear glasses"),
    ("U: I speak Portuguese at home.", "Speaks Portuguese at home", "I speak Portuguese at home"),
    ("U: I collect vinyl records.", "Collects vinyl", "I collect vinyl records"),
    ("U: I don't own a car.", "Has no car", "I don't own a car"),
    ("U: I'm a vegan.", "Follows a vegan diet", "I'm a vegan"),
    ("U: I live alone in a small flat.", "Lives alone in a small apartment", "I live alone in a small flat"),
    ("U: I'm studying for a master's in economics.", "Pursuing a master's degree in economics",
     "studying for a master's in economics"),
    ("U: I meditate for 20 minutes each morning.", "Meditates 20 minutes every morning",
     "I meditate for 20 minutes each morning"),
    ("U: I can't eat gluten.", "Is gluten intolerant", "I can't eat gluten"),
    ("U: I love rainy days.", "Enjoys rainy weather", "I love rainy days"),
    ("U: I'm a teacher at an elementary school.", "Teaches at a primary school",
     "I'm a teacher at an elementary school"),
    ("U: I've got two cats and a dog.", "Owns two cats and one dog", "I've got two cats and a dog"),
    ("U: I grew up on a farm in Iowa.", "Raised on a farm in Iowa", "I grew up on a farm in Iowa"),
    ("U: I go swimming on Tuesdays.", "Swims every Tuesday", "I go swimming on Tuesdays"),
    ("U: I prefer tea over coffee.", "Prefers tea to coffee", "I prefer tea over coffee"),
    ("U: I work remotely for a company in Berlin.", "Remote worker for a Berlin company",
     "I work remotely for a company in Berlin"),
    ("U: I have type 1 diabetes.", "Is a type 1 diabetic", "I have type 1 diabetes"),
    ("U: I like to read before bed.", "Reads at bedtime", "I like to read before bed"),
    ("U: I'm afraid of spiders.", "Fears spiders", "I'm afraid of spiders"),
    ("U: I don't like spicy food.", "Dislikes spicy food", "I don't like spicy food"),
    ("U: I ride my motorbike on weekends.", "Rides a motorcycle at weekends", "I ride my motorbike on weekends"),
    ("U: I volunteer at an animal shelter.", "Volunteers at an animal shelter", "I volunteer at an animal shelter"),
    ("U: I'm left-handed.", "Is left handed", "I'm left-handed"),
    ("U: I sleep about six hours a night.", "Sleeps around 6 hours per night", "I sleep about six hours a night"),
    ("U: I bake bread every weekend.", "Bakes bread on weekends", "I bake bread every weekend"),
    ("U: I'm colour-blind.", "Has colour blindness", "I'm colour-blind"),
    ("U: I run a small bakery.", "Owns a small bakery", "I run a small bakery"),
    ("U: I enjoy woodworking in my garage.", "Does woodworking as a hobby", "I enjoy woodworking in my garage"),
    ("U: I'm an only child.", "Has no siblings", "I'm an only child"),
    ("U: I play football with friends on Sundays.", "Plays soccer with friends on Sundays",
     "I play football with friends on Sundays"),
    ("U: I don't drink coffee after 3 pm.", "Avoids coffee after 3 pm", "I don't drink coffee after 3 pm"),
    ("U: I'm a nurse.", "Works as a nurse", "I'm a nurse"),
    ("U: I write poetry in my free time.", "Writes poems as a hobby", "I write poetry in my free time"),
    ("U: I need my answers in Spanish.", "Wants replies in Spanish", "I need my answers in Spanish"),
    ("U: I've lived in Tokyo for five years.", "Has lived in Tokyo for 5 years", "I've lived in Tokyo for five years"),
    ("U: I'm training to be a pilot.", "Is a trainee pilot", "I'm training to be a pilot"),
    ("U: I usually go to bed at midnight.", "Bedtime is usually 12 am", "I usually go to bed at midnight"),
    ("U: I'm really into astronomy.", "Interested in astronomy", "I'm really into astronomy"),
    ("U: I have a twin brother.", "Has a twin brother", "I have a twin brother"),
    ("U: I fix old bicycles as a hobby.", "Repairs vintage bikes as a hobby", "I fix old bicycles as a hobby"),
    ("U: I drink about three cups of coffee a day.", "Has 3 coffees a day",
     "I drink about three cups of coffee a day"),
    ("U: I'm allergic to cats.", "Has a cat allergy", "I'm allergic to cats"),
]

# A second batch, written after the first was measured and before any change for item 5 was
# run on it: the first batch was looked at while the check was improved, this one never was.
_HELDOUT_B = [
    ("U: I teach yoga part-time.", "Part-time yoga teacher", "I teach yoga part-time"),
    ("U: I've been married for ten years.", "Married for 10 years", "I've been married for ten years"),
    ("U: I work in marketing at a bank.", "Marketing job at a bank", "I work in marketing at a bank"),
    ("U: I usually cook dinner for the family.", "Cooks the family's dinner", "I usually cook dinner for the family"),
    ("U: I'm terrible at maths.", "Struggles with maths", "I'm terrible at maths"),
    ("U: I walk my dog twice a day.", "Walks the dog two times daily", "I walk my dog twice a day"),
    ("U: I don't have a TV.", "Owns no television", "I don't have a TV"),
    ("U: I'm a big reader of history books.", "Reads a lot of history books", "I'm a big reader of history books"),
    ("U: I hate the cold.", "Dislikes cold weather", "I hate the cold"),
    ("U: I love going to concerts.", "Enjoys live concerts", "I love going to concerts"),
    ("U: I play tennis every Saturday.", "Tennis on Saturdays", "I play tennis every Saturday"),
    ("U: I'm a morning person.", "Is an early riser", "I'm a morning person"),
    ("U: I drink a lot of water.", "Drinks plenty of water", "I drink a lot of water"),
    ("U: I work as an accountant.", "Accountant by profession", "I work as an accountant"),
    ("U: I'm saving up for a house.", "Saving money to buy a house", "I'm saving up for a house"),
    ("U: I go hiking most weekends.", "Hikes on most weekends", "I go hiking most weekends"),
    ("U: I never eat breakfast.", "Skips breakfast", "I never eat breakfast"),
    ("U: I'm learning to play the drums.", "Learning drums", "I'm learning to play the drums"),
    ("U: I have three brothers.", "Has 3 brothers", "I have three brothers"),
    ("U: I ride horses on weekends.", "Horse rider (weekends)", "I ride horses on weekends"),
    ("U: I'm a heavy sleeper.", "Sleeps deeply", "I'm a heavy sleeper"),
    ("U: I listen to podcasts on my commute.", "Listens to podcasts while commuting", "I listen to podcasts on my commute"),
    ("U: I'm not good with names.", "Has trouble remembering names", "I'm not good with names"),
    ("U: I run my own consulting business.", "Runs a consulting company", "I run my own consulting business"),
    ("U: I'm a huge coffee drinker.", "Drinks a lot of coffee", "I'm a huge coffee drinker"),
    ("U: I study at night after work.", "Studies in the evenings after work", "I study at night after work"),
    ("U: I prefer working in the morning.", "Prefers to work mornings", "I prefer working in the morning"),
    ("U: I grew up in Seoul.", "Grew up in Seoul", "I grew up in Seoul"),
    ("U: My job is very stressful.", "Has a stressful job", "My job is very stressful"),
    ("U: I speak three languages.", "Speaks 3 languages", "I speak three languages"),
]


def heldout_b() -> list[Case]:
    """The second batch, never looked at while the check was changed."""
    return [_c("paraphrase", conv, fact, (1,), quote) for conv, fact, quote in _HELDOUT_B]


def heldout() -> list[Case]:
    """The fifty held-out paraphrases: each must be written; how many are held is measured."""
    return [_c("paraphrase", conv, fact, (1,), quote) for conv, fact, quote in _HELDOUT]
