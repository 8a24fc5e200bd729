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


# A third batch (issue 27, the review of the last round), written before any change it measures
# was made and run once on the check as it was: plain paraphrases again, and the hostile kinds
# the review found, each in a message of more than one clause: a "not" or a question in another
# clause than the one that says the fact, the past and the present ("I was married"), a name as
# the subject (the user's own, or another person's). ``_HELDOUT_C`` are facts the user said
# (each must be written; the held ones are counted), ``_INVENTED_C`` are facts the message does
# not say as the fact says them (each must not be written as stated).
_HELDOUT_C = [
    ("U: I don't eat meat, but I love fish.", "Loves fish", "I don't eat meat, but I love fish"),
    ("U: Can you help me with a recipe? I play the cello in an orchestra.", "Plays cello in an orchestra",
     "Can you help me with a recipe? I play the cello in an orchestra"),
    ("U: I play the cello, can you suggest some pieces?", "Plays the cello",
     "I play the cello, can you suggest some pieces?"),
    ("U: I'm not a fan of crowds, but I enjoy small dinner parties.", "Enjoys small dinner parties",
     "I'm not a fan of crowds, but I enjoy small dinner parties"),
    ("U: What's a good gift for a runner? I run marathons myself.", "Runs marathons",
     "What's a good gift for a runner? I run marathons myself"),
    ("U: I'm married, with two kids.", "Is married", "I'm married"),
    ("U: I never learned to drive, so I cycle everywhere.", "Cycles everywhere",
     "I never learned to drive, so I cycle everywhere"),
    ("U: Any tips for sleeping during the day? I work night shifts at a warehouse.",
     "Works night shifts at a warehouse", "I work night shifts at a warehouse"),
    ("U: I don't have a car, I cycle everywhere.", "Cycles everywhere", "I don't have a car, I cycle everywhere"),
    ("U: I'm from Kenya originally but I live in Leeds now.", "Lives in Leeds",
     "I'm from Kenya originally but I live in Leeds now"),
    ("U: I can't stand horror films, though I love thrillers.", "Likes thrillers",
     "I can't stand horror films, though I love thrillers"),
    ("U: Should I buy a new laptop? I work as a video editor.", "Works as a video editor",
     "Should I buy a new laptop? I work as a video editor"),
    ("U: I'm not sure about Python, but I code in Go every day.", "Codes in Go daily",
     "I'm not sure about Python, but I code in Go every day"),
    ("U: Hi, Sam here. I play cello in a quartet.", "Plays cello in a quartet", "I play cello in a quartet"),
    ("U: I'm Sam. Sam plays the cello, for the record.", "Plays the cello", "Sam plays the cello"),
    ("U: I was married for ten years; I'm divorced now.", "Is divorced", "I'm divorced now"),
    ("U: I used to smoke but now I'm a runner.", "Is a runner", "now I'm a runner"),
    ("U: We don't have pets, but I volunteer at a cat shelter.", "Volunteers at a cat shelter",
     "We don't have pets, but I volunteer at a cat shelter"),
    ("U: I'm a photographer.", "Works as a photographer", "I'm a photographer"),
    ("U: I'm a keen birdwatcher.", "Enjoys birdwatching", "I'm a keen birdwatcher"),
    ("U: I have asthma.", "Is asthmatic", "I have asthma"),
    ("U: I live with my partner and our two dogs.", "Lives with partner and 2 dogs",
     "I live with my partner and our two dogs"),
    ("U: I work for a charity in Glasgow.", "Works at a charity in Glasgow", "I work for a charity in Glasgow"),
    ("U: I'm retired.", "Is retired", "I'm retired"),
    ("U: I usually cycle to work.", "Bikes to work", "I usually cycle to work"),
    ("U: I'm fluent in French.", "Speaks French fluently", "I'm fluent in French"),
    ("U: I started a pottery class this month.", "Takes a pottery class", "I started a pottery class"),
    ("U: I'm short-sighted.", "Is nearsighted", "I'm short-sighted"),
    ("U: I don't like mushrooms.", "Dislikes mushrooms", "I don't like mushrooms"),
    ("U: I moved to Dublin in 2021.", "Has lived in Dublin since 2021", "I moved to Dublin in 2021"),
    ("U: I have a PhD in physics.", "Holds a doctorate in physics", "I have a PhD in physics"),
    ("U: I work twelve-hour shifts.", "Works 12-hour shifts", "I work twelve-hour shifts"),
    ("U: My name's Ola and I'm a dentist.", "Is a dentist", "I'm a dentist"),
    ("U: Honestly, I'm not much of a cook, but I bake a lot.", "Bakes a lot",
     "I'm not much of a cook, but I bake a lot"),
    ("U: I love dogs but I'm allergic to them.", "Is allergic to dogs", "I love dogs but I'm allergic to them"),
    ("U: Is it normal to be tired? I've been running 5k daily.", "Runs 5 km every day",
     "I've been running 5k daily"),
    ("U: I'm learning Italian, do you know any good apps?", "Is learning Italian",
     "I'm learning Italian, do you know any good apps?"),
    ("U: I no longer smoke, and I go to the gym every day.", "Goes to the gym daily",
     "I no longer smoke, and I go to the gym every day"),
    ("U: I hate mornings. I'm a night owl.", "Is a night owl", "I hate mornings. I'm a night owl"),
    ("U: I drive a taxi for a living.", "Works as a taxi driver", "I drive a taxi for a living"),
]

_INVENTED_C = [
    ("U: I don't eat meat, but I love fish.", "Eats meat", "I don't eat meat, but I love fish"),
    ("U: I love fish, but I don't eat meat.", "Eats meat", "I love fish, but I don't eat meat"),
    ("U: I love fish, but I don't eat meat.", "Loves meat", "I love fish, but I don't eat meat"),
    ("U: I play the cello. Should I learn the violin?", "Plays the violin",
     "I play the cello. Should I learn the violin?"),
    ("U: Can you recommend a cello teacher? My daughter plays the cello.", "Plays the cello",
     "Can you recommend a cello teacher? My daughter plays the cello"),
    ("U: I was married for ten years.", "Is married", "I was married for ten years"),
    ("U: I was married.", "Is married", "I was married"),
    ("U: My friend Sam is staying with us. Sam plays the cello.", "Plays the cello", "Sam plays the cello"),
    ("U: I'm Ola. My neighbour Ana is a nurse.", "Is a nurse", "Ana is a nurse"),
    ("U: I'm Ola. Ana plays the cello.", "Plays the cello", "Ana plays the cello"),
    ("U: I'm not a nurse, but my wife is.", "Is a nurse", "I'm not a nurse, but my wife is"),
    ("U: I don't live in Leeds anymore, I moved to York.", "Lives in Leeds",
     "I don't live in Leeds anymore, I moved to York"),
    ("U: I live in Leeds.", "Lives in York", "I live in Leeds"),
    ("U: I have two cats.", "Has 3 cats", "I have two cats"),
    ("U: My birthday is 12 May.", "Birthday: 21 May", "My birthday is 12 May"),
    ("U: Do you think I should move to Lisbon? I live in Porto.", "Lives in Lisbon",
     "Do you think I should move to Lisbon? I live in Porto"),
    ("U: I used to play the cello, now I play guitar.", "Plays the cello",
     "I used to play the cello, now I play guitar"),
    ("U: Tom runs marathons. I prefer swimming.", "Runs marathons", "Tom runs marathons. I prefer swimming"),
    ("U: I'm allergic to cats, but I love dogs.", "Is allergic to dogs", "I'm allergic to cats, but I love dogs"),
    ("U: I'd love to learn Japanese one day. I speak Korean.", "Speaks Japanese",
     "I'd love to learn Japanese one day. I speak Korean"),
    ("U: I drink tea, never coffee.", "Drinks coffee", "I drink tea, never coffee"),
    ("U: My sister is vegan. I eat everything.", "Is vegan", "My sister is vegan. I eat everything"),
    ("U: I was a teacher before I retired.", "Is a teacher", "I was a teacher before I retired"),
    ("U: I had a dog when I was a kid. Now I have a cat.", "Has a dog",
     "I had a dog when I was a kid. Now I have a cat"),
    ("U: Is it hard to keep bees? I'm thinking about it.", "Keeps bees", "Is it hard to keep bees?"),
    ("U: I wake up at 6 on weekdays.", "Wakes up at 7 on weekdays", "I wake up at 6 on weekdays"),
    ("U: Sam is my son. He plays rugby.", "Plays rugby", "He plays rugby"),
    ("U: I'm Sam. My brother Alex plays the cello.", "Plays the cello", "Alex plays the cello"),
    ("U: Is it worth learning Rust, for someone like me?", "Is learning Rust",
     "Is it worth learning Rust, for someone like me?"),
    ("U: I'm a nurse, but should I become a doctor?", "Is a doctor", "I'm a nurse, but should I become a doctor?"),
]


def heldout_c() -> list[Case]:
    """The third batch's facts the user said (written before the changes it measures)."""
    return [_c("paraphrase", conv, fact, (1,), quote) for conv, fact, quote in _HELDOUT_C]


def invented_c() -> list[Case]:
    """The third batch's facts the message does not say so: none may be written as stated."""
    return [_c("hostile", conv, fact, (1,), quote) for conv, fact, quote in _INVENTED_C]


# A fourth batch: plain paraphrases again (the kind A and B hold a third of), written before the
# word rules it measures and run once on the check as it was; ``_ALTERED_D`` are lookalikes that
# change a name, number, place or time, or say the opposite, and must not be written.
_HELDOUT_D = [
    ("U: I work as a plumber.", "Plumber by trade", "I work as a plumber"),
    ("U: I'm a stay-at-home dad.", "Stays at home with the kids", "I'm a stay-at-home dad"),
    ("U: I get migraines a lot.", "Suffers from frequent migraines", "I get migraines a lot"),
    ("U: I don't eat pork.", "Avoids pork", "I don't eat pork"),
    ("U: I'm a night person.", "Is a night owl", "I'm a night person"),
    ("U: I go to church on Sundays.", "Attends church every Sunday", "I go to church on Sundays"),
    ("U: I'm a huge fan of Studio Ghibli films.", "Loves Studio Ghibli movies", "I'm a huge fan of Studio Ghibli films"),
    ("U: I have a bad knee.", "Has a knee problem", "I have a bad knee"),
    ("U: I own a small vineyard.", "Has a small vineyard", "I own a small vineyard"),
    ("U: I'm studying law.", "Law student", "I'm studying law"),
    ("U: I play the saxophone in a band.", "Saxophonist in a band", "I play the saxophone in a band"),
    ("U: I jog every morning.", "Goes jogging each morning", "I jog every morning"),
    ("U: I can't swim.", "Unable to swim", "I can't swim"),
    ("U: I'm a pescatarian.", "Eats fish but no meat", "I'm a pescatarian"),
    ("U: I travel a lot for work.", "Travels frequently for work", "I travel a lot for work"),
    ("U: I'm an engineer at Volvo.", "Works at Volvo as an engineer", "I'm an engineer at Volvo"),
    ("U: I have two daughters.", "Has 2 daughters", "I have two daughters"),
    ("U: I hate flying.", "Dislikes air travel", "I hate flying"),
    ("U: I'm useless at cooking.", "Is a bad cook", "I'm useless at cooking"),
    ("U: I like my coffee strong.", "Prefers strong coffee", "I like my coffee strong"),
    ("U: I'm lactose intolerant.", "Can't have dairy", "I'm lactose intolerant"),
    ("U: I live near the sea.", "Lives by the coast", "I live near the sea"),
    ("U: I'm a single mum.", "Single mother", "I'm a single mum"),
    ("U: I'm learning to code.", "Learning programming", "I'm learning to code"),
    ("U: I go climbing twice a week.", "Climbs 2 times a week", "I go climbing twice a week"),
    ("U: I work in IT support.", "IT support job", "I work in IT support"),
    ("U: I usually eat lunch at my desk.", "Eats lunch at the desk", "I usually eat lunch at my desk"),
    ("U: I have a sweet tooth.", "Loves sweets", "I have a sweet tooth"),
    ("U: I prefer email to phone calls.", "Prefers email over calls", "I prefer email to phone calls"),
    ("U: I'm bilingual in English and Welsh.", "Speaks English and Welsh", "I'm bilingual in English and Welsh"),
    ("U: I've never been abroad.", "Has never travelled abroad", "I've never been abroad"),
    ("U: I'm a pensioner.", "Is retired", "I'm a pensioner"),
    ("U: I take the train to work.", "Commutes by rail", "I take the train to work"),
    ("U: I ride my bike to work.", "Cycles to work", "I ride my bike to work"),
    ("U: I wake up at 6:30 on weekdays.", "Gets up at 6:30 on weekdays", "I wake up at 6:30 on weekdays"),
    ("U: I'm diabetic.", "Has diabetes", "I'm diabetic"),
    ("U: I love gardening.", "Enjoys gardening", "I love gardening"),
    ("U: I'm a junior doctor.", "Works as a junior doctor", "I'm a junior doctor"),
    ("U: My favourite band is Radiohead.", "Likes Radiohead", "My favourite band is Radiohead"),
    ("U: I'm a keen gardener.", "Gardening enthusiast", "I'm a keen gardener"),
]

_ALTERED_D = [
    ("U: I work as a plumber.", "Electrician by trade", "I work as a plumber"),
    ("U: I have two daughters.", "Has 3 daughters", "I have two daughters"),
    ("U: I'm an engineer at Volvo.", "Works at Saab as an engineer", "I'm an engineer at Volvo"),
    ("U: I wake up at 6:30 on weekdays.", "Gets up at 7:30 on weekdays", "I wake up at 6:30 on weekdays"),
    ("U: I love gardening.", "Dislikes gardening", "I love gardening"),
    ("U: I hate flying.", "Loves flying", "I hate flying"),
    ("U: I go climbing twice a week.", "Climbs 3 times a week", "I go climbing twice a week"),
    ("U: My favourite band is Radiohead.", "Likes Coldplay", "My favourite band is Radiohead"),
    ("U: I live near the sea.", "Lives in the mountains", "I live near the sea"),
    ("U: I'm bilingual in English and Welsh.", "Speaks English and Irish", "I'm bilingual in English and Welsh"),
    ("U: I go to church on Sundays.", "Attends church every Saturday", "I go to church on Sundays"),
    ("U: I like my coffee strong.", "Prefers strong tea", "I like my coffee strong"),
    ("U: I'm a night person.", "Is an early riser", "I'm a night person"),
    ("U: I can't swim.", "Swims", "I can't swim"),
    ("U: I don't eat pork.", "Eats pork", "I don't eat pork"),
    ("U: I'm studying law.", "Medical student", "I'm studying law"),
    ("U: My brother is a plumber.", "Plumber by trade", "My brother is a plumber"),
    ("U: I used to jog every morning.", "Jogs every morning", "I used to jog every morning"),
    ("U: Should I take up climbing?", "Climbs", "Should I take up climbing?"),
    ("U: what time is it?\nA: You seem to be a keen gardener.", "Keen gardener", "You seem to be a keen gardener"),
]


def heldout_d() -> list[Case]:
    """The fourth batch's plain paraphrases (written before the word rules they measure)."""
    return [_c("paraphrase", conv, fact, (1,), quote) for conv, fact, quote in _HELDOUT_D]


def altered_d() -> list[Case]:
    """The fourth batch's lookalikes: none may be written as stated."""
    return [_c("altered", conv, fact, (2,) if "\nA:" in conv else (1,), quote) for conv, fact, quote in _ALTERED_D]


# A fifth batch, written with the fourth and never listed case by case while the word rules were
# made: only its totals were printed, before and after, so it says what the rules do on
# paraphrases nobody tuned them on.
_HELDOUT_E = [
    ("U: I'm a pharmacist at a hospital.", "Hospital pharmacist", "I'm a pharmacist at a hospital"),
    ("U: I've been vegetarian for 12 years.", "Vegetarian for twelve years", "I've been vegetarian for 12 years"),
    ("U: I live in a flat in Madrid with two flatmates.", "Shares an apartment in Madrid with 2 flatmates",
     "I live in a flat in Madrid with two flatmates"),
    ("U: I prefer dark mode in every app.", "Likes dark mode", "I prefer dark mode in every app"),
    ("U: I'm doing a PhD in chemistry.", "PhD student in chemistry", "I'm doing a PhD in chemistry"),
    ("U: I drive an electric car.", "Owns an EV", "I drive an electric car"),
    ("U: I love spicy food.", "Enjoys hot, spicy dishes", "I love spicy food"),
    ("U: I work four days a week.", "Works a 4-day week", "I work four days a week"),
    ("U: I'm scared of heights.", "Afraid of heights", "I'm scared of heights"),
    ("U: I go to the cinema every Friday.", "Sees a film every Friday", "I go to the cinema every Friday"),
    ("U: I've got a cat called Pepper.", "Cat named Pepper", "I've got a cat called Pepper"),
    ("U: I don't drink alcohol.", "Is teetotal", "I don't drink alcohol"),
    ("U: I'm a keen cyclist.", "Enjoys cycling", "I'm a keen cyclist"),
    ("U: I run a YouTube channel about cooking.", "Has a cooking channel on YouTube",
     "I run a YouTube channel about cooking"),
    ("U: I was born in 1985.", "Birth year: 1985", "I was born in 1985"),
    ("U: I teach English to adults.", "English teacher for adults", "I teach English to adults"),
    ("U: I have a peanut allergy and asthma.", "Allergic to peanuts; has asthma", "I have a peanut allergy and asthma"),
    ("U: I listen to a lot of jazz.", "Listens to jazz often", "I listen to a lot of jazz"),
    ("U: I'm in my forties.", "Is in their 40s", "I'm in my forties"),
    ("U: I support Liverpool.", "Liverpool fan", "I support Liverpool"),
    ("U: I moved here from Poland.", "Originally from Poland", "I moved here from Poland"),
    ("U: I sleep badly.", "Has trouble sleeping", "I sleep badly"),
    ("U: I work for the council.", "Works in local government", "I work for the council"),
    ("U: I'm a carer for my mum.", "Cares for mother", "I'm a carer for my mum"),
    ("U: I walk 10,000 steps a day.", "Walks 10000 steps daily", "I walk 10,000 steps a day"),
    ("U: I write fantasy novels.", "Fantasy author", "I write fantasy novels"),
    ("U: I can't stand loud music.", "Dislikes loud music", "I can't stand loud music"),
    ("U: I do the crossword every morning.", "Solves the crossword each morning", "I do the crossword every morning"),
    ("U: I'm a vegan and I run ultramarathons.", "Vegan ultramarathon runner", "I'm a vegan and I run ultramarathons"),
    ("U: I'm originally from Sweden.", "Swedish by origin", "I'm originally from Sweden"),
]

_ALTERED_E = [
    ("U: I'm a pharmacist at a hospital.", "Hospital nurse", "I'm a pharmacist at a hospital"),
    ("U: I've been vegetarian for 12 years.", "Vegetarian for 20 years", "I've been vegetarian for 12 years"),
    ("U: I live in a flat in Madrid with two flatmates.", "Lives in Barcelona", "I live in a flat in Madrid"),
    ("U: I love spicy food.", "Dislikes spicy food", "I love spicy food"),
    ("U: I was born in 1985.", "Birth year: 1958", "I was born in 1985"),
    ("U: I support Liverpool.", "Everton fan", "I support Liverpool"),
    ("U: My dad is a carpenter.", "Works as a carpenter", "My dad is a carpenter"),
    ("U: I'd like to run a marathon someday.", "Runs marathons", "I'd like to run a marathon someday"),
    ("U: I don't drink alcohol.", "Drinks alcohol", "I don't drink alcohol"),
    ("U: I work four days a week.", "Works 5 days a week", "I work four days a week"),
]


def heldout_e() -> list[Case]:
    """The fifth batch's paraphrases (only their totals were looked at while the rules were made)."""
    return [_c("paraphrase", conv, fact, (1,), quote) for conv, fact, quote in _HELDOUT_E]


def altered_e() -> list[Case]:
    """The fifth batch's lookalikes: none may be written as stated."""
    return [_c("altered", conv, fact, (1,), quote) for conv, fact, quote in _ALTERED_E]


# A sixth batch, written before WordNet was let into the check (core/memory/lexicon.py) and run
# once on it: facts a lexicon could wrongly let through. Another kind of the same thing
# (co-hyponyms), an opposite, the more specific word where the quote says the general one, a
# rare sense of a word, a verb WordNet puts in one synset with another that means something else
# in a fact. None may be written.
_ALTERED_F = [
    ("U: I play the cello.", "Plays the violin", "I play the cello"),
    ("U: I play the cello.", "Is a violinist", "I play the cello"),
    ("U: I have a cat.", "Has a dog", "I have a cat"),
    ("U: I have a cat.", "Has a lion", "I have a cat"),
    ("U: I have a dog.", "Has a puppy", "I have a dog"),
    ("U: I drink coffee every morning.", "Drinks tea every morning", "I drink coffee every morning"),
    ("U: I drink a glass of wine with dinner.", "Drinks beer with dinner", "I drink a glass of wine with dinner"),
    ("U: I'm a doctor.", "Is a nurse", "I'm a doctor"),
    ("U: I'm a nurse.", "Is a surgeon", "I'm a nurse"),
    ("U: I'm a teacher.", "Is a student", "I'm a teacher"),
    ("U: I like jazz.", "Loves jazz", "I like jazz"),
    ("U: I like jazz.", "Adores jazz", "I like jazz"),
    ("U: I love jazz.", "Hates jazz", "I love jazz"),
    ("U: I bought a house.", "Sold a house", "I bought a house"),
    ("U: I rent a flat.", "Owns a flat", "I rent a flat"),
    ("U: I have a son.", "Has a daughter", "I have a son"),
    ("U: I have a child.", "Has a son", "I have a child"),
    ("U: I have a brother.", "Has a sister", "I have a brother"),
    ("U: I have a partner.", "Has a wife", "I have a partner"),
    ("U: I have a wife.", "Has a husband", "I have a wife"),
    ("U: I play football on Mondays.", "Plays rugby on Mondays", "I play football on Mondays"),
    ("U: I play an instrument.", "Plays the piano", "I play an instrument"),
    ("U: I eat meat.", "Eats beef", "I eat meat"),
    ("U: I'm a vegetarian.", "Is a vegan", "I'm a vegetarian"),
    ("U: I go swimming.", "Goes running", "I go swimming"),
    ("U: I walk to work.", "Runs to work", "I walk to work"),
    ("U: I drive to work.", "Cycles to work", "I drive to work"),
    ("U: I'm travelling to Berlin next week.", "Is moving to Berlin next week", "I'm travelling to Berlin next week"),
    ("U: I'm staying in Berlin for a week.", "Lives in Berlin", "I'm staying in Berlin for a week"),
    ("U: I study law.", "Teaches law", "I study law"),
    ("U: I'm engaged.", "Is married", "I'm engaged"),
    ("U: I live in a small town.", "Lives in a big city", "I live in a small town"),
    ("U: I'm tall.", "Is short", "I'm tall"),
    ("U: I love hot weather.", "Loves cold weather", "I love hot weather"),
    ("U: I work the early shift.", "Works the late shift", "I work the early shift"),
    ("U: I have a Mac.", "Has a raincoat", "I have a Mac"),
    ("U: My cat is called Miso.", "Has a guy called Miso", "My cat is called Miso"),
    ("U: I take the train to work.", "Takes the bus to work", "I take the train to work"),
    ("U: I grow tomatoes.", "Grows potatoes", "I grow tomatoes"),
    ("U: I'm learning Spanish.", "Speaks Spanish fluently", "I'm learning Spanish"),
]


def altered_f() -> list[Case]:
    """The sixth batch: lookalikes a lexicon could let through; none may be written as stated."""
    return [_c("altered", conv, fact, (1,), quote) for conv, fact, quote in _ALTERED_F]


# A seventh batch (issue 27, after F): lookalikes the hand-made word groups let through, found
# when F showed them. The first three were found before the audit of the groups; the rest while
# the groups were audited for opposites, co-members of a kind and narrower words, so this batch
# is no held-out figure: it says what the word list must never let through again.
_ALTERED_G = [
    ("U: I am short.", "Is tall", "I am short"),
    ("U: I live in the country.", "Lives in the city", "I live in the country"),
    ("U: I have a boyfriend.", "Has a girlfriend", "I have a boyfriend"),
    ("U: I have a cat.", "Has a kitten", "I have a cat"),
    ("U: I'm married.", "Has a wife", "I'm married"),
    ("U: I drink coffee.", "Drinks espresso", "I drink coffee"),
    ("U: I speak Spanish.", "Is fluent in Spanish", "I speak Spanish"),
    ("U: I'm an engineer.", "Is a software engineer", "I'm an engineer"),
    ("U: I'm a doctor.", "Is a GP", "I'm a doctor"),
    ("U: I like cooking.", "Is a chef", "I like cooking"),
    ("U: I cook every day.", "Works as a baker", "I cook every day"),
    ("U: I like dogs.", "Wants a dog", "I like dogs"),
    ("U: I have a computer.", "Has a laptop", "I have a computer"),
    ("U: I live in a flat.", "Lives in a house", "I live in a flat"),
    ("U: I commute by train.", "Drives to work", "I commute by train"),
    ("U: I wake up at 10.", "Is an early riser", "I wake up at 10"),
    ("U: I take the train daily.", "Exercises daily", "I take the train daily"),
    ("U: I paid 500 for my bike.", "Earns 500", "I paid 500 for my bike"),
    ("U: I sometimes drink coffee.", "Always drinks coffee", "I sometimes drink coffee"),
    ("U: I like pizza.", "Is tall", "I like pizza"),
    ("U: I like music.", "Is a musician", "I like music"),
    ("U: I'm allergic to bees.", "Is a beekeeper", "I'm allergic to bees"),
    ("U: I work from home.", "Works in an office", "I work from home"),
]


def altered_g() -> list[Case]:
    """The seventh batch: lookalikes through the word groups; none may be written as stated."""
    return [_c("altered", conv, fact, (1,), quote) for conv, fact, quote in _ALTERED_G]
