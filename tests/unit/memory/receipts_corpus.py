"""A corpus for the receipt check (core/memory/receiptcheck.py): what consolidating models send.

Each case is a short conversation (``U:`` the user, ``A:`` the assistant, one message a line),
the fact a model wrote and the receipt it gave (message numbers, quote). ``SAID`` are facts
the user said, reworded the way real models reword them: paraphrase, ``key: value``, merges of
two messages, English/Chinese code-switching, numbers, times and dates restated, quotes with
an elision or a slip of case and punctuation. ``INVENTED`` are facts nobody said, or said
otherwise: no receipt, a quote that is in no message, another name, number, date or place,
the opposite, or only the assistant's own guess (``inferred``).

The quotes are what a model copies: often shorter than the message, sometimes with a word's
case or punctuation changed. Nothing here was tuned to pass: a case the check holds
wrongly stays, and counts against the 2 % the test allows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    kind: str  # paraphrase keyvalue merge codeswitch numbers | none name number date place opposite inferred
    messages: tuple[tuple[str, str], ...]
    fact: str
    receipt: tuple[tuple[int, ...], str] | None  # None: the model gave none
    old: str = ""  # an update: the fact's old wording

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.fact[:40]}"


def _msgs(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for line in text.strip().splitlines():
        who, _, said = line.strip().partition(": ")
        out.append(("user" if who == "U" else "assistant", said))
    return tuple(out)


def _c(kind: str, conv: str, fact: str, nums: tuple[int, ...] | None, quote: str = "", old: str = "") -> Case:
    return Case(kind, _msgs(conv), fact, None if nums is None else (nums, quote), old)


_SAID = [
    # --- the four from issue 27 ---
    ("paraphrase", "U: Sam keeps bees in the garden.", "Is a hobby beekeeper", (1,), "keeps bees in the garden"),
    ("paraphrase", "U: Sam prefers short answers, please.", "Wants concise replies", (1,), "Sam prefers short answers"),
    ("paraphrase", "U: Sam plays the cello", "Is a cellist", (1,), "Sam plays the cello"),
    ("keyvalue", "U: I usually wake up at 5 am, even on weekends.", "Wake-up time: 5 am", (1,), "wake up at 5 am"),
    # --- paraphrase ---
    ("paraphrase", "U: I keep three hives on the roof.\nA: Nice!", "Keeps bees on the roof", (1,),
     "I keep three hives on the roof"),
    ("paraphrase", "U: please keep it brief, I read on my phone", "Likes brief answers when reading on the phone",
     (1,), "please keep it brief, I read on my phone"),
    ("paraphrase", "U: I've played the violin since I was a kid", "Is a violinist", (1,),
     "I've played the violin since I was a kid"),
    ("paraphrase", "U: I go running every morning before work.", "Runs every morning before work", (1,),
     "I go running every morning before work"),
    ("paraphrase", "U: I can't stand cilantro, it tastes like soap to me", "Dislikes cilantro", (1,),
     "I can't stand cilantro"),
    ("paraphrase", "U: I hate coriander honestly", "Dislikes cilantro", (1,), "I hate coriander"),
    ("paraphrase", "U: most of my day I write code in Rust", "Programs in Rust", (1,), "I write code in Rust"),
    ("paraphrase", "U: I'm a software engineer at a small startup.", "Works as a programmer at a startup", (1,),
     "I'm a software engineer at a small startup"),
    ("paraphrase", "U: We have a cat named Miso.", "Has a cat called Miso", (1,), "We have a cat named Miso"),
    ("paraphrase", "U: our kitten Miso just knocked over my coffee", "Has a cat named Miso", (1,),
     "our kitten Miso"),
    ("paraphrase", "U: I don't eat meat.", "Is vegetarian", (1,), "I don't eat meat"),
    ("paraphrase", "U: I'm vegetarian since last year", "Doesn't eat meat", (1,), "I'm vegetarian"),
    ("paraphrase", "U: I love hiking in the Alps.", "Enjoys hiking in the Alps", (1,), "I love hiking in the Alps"),
    ("paraphrase", "U: I'm really into bouldering lately", "Enjoys climbing", (1,), "I'm really into bouldering"),
    ("paraphrase", "U: I cycle to the office most days.", "Commutes by bike", (1,), "I cycle to the office"),
    ("paraphrase", "U: I bike to work", "Cycles to work", (1,), "I bike to work"),
    ("paraphrase", "U: I drink my coffee black, no sugar.", "Takes coffee black without sugar", (1,),
     "I drink my coffee black, no sugar"),
    ("paraphrase", "U: I'm allergic to peanuts, so careful with recipes", "Has a peanut allergy", (1,),
     "I'm allergic to peanuts"),
    ("paraphrase", "U: I have a peanut allergy", "Is allergic to peanuts", (1,), "I have a peanut allergy"),
    ("paraphrase", "U: I'm learning Japanese for a trip next spring.", "Studies Japanese", (1,),
     "I'm learning Japanese"),
    ("paraphrase", "U: I speak fluent German, grew up in Vienna", "Speaks German fluently", (1,),
     "I speak fluent German"),
    ("paraphrase", "U: my partner Alex is a nurse", "Partner Alex works in nursing", (1,), "my partner Alex is a nurse"),
    ("paraphrase", "U: I teach maths at a secondary school.", "Is a maths teacher at a secondary school", (1,),
     "I teach maths at a secondary school"),
    ("paraphrase", "U: I play chess online most evenings", "Plays chess online in the evening", (1,),
     "I play chess online most evenings"),
    ("paraphrase", "U: I'm an early riser, always up at dawn", "Is a morning person who rises at dawn", (1,),
     "always up at dawn"),
    ("paraphrase", "U: Please give me detailed explanations, I like to understand things.",
     "Prefers thorough explanations", (1,), "Please give me detailed explanations"),
    ("paraphrase", "U: I go to the gym three times a week", "Works out 3 times a week", (1,),
     "I go to the gym three times a week"),
    ("paraphrase", "U: I knit scarves for my family every winter", "Knits scarves for family in winter", (1,),
     "I knit scarves for my family every winter"),
    ("paraphrase", "U: I'm a big fan of jazz.", "Likes jazz", (1,), "I'm a big fan of jazz"),
    ("paraphrase", "U: I mostly read science fiction.", "Reads mostly science fiction", (1,),
     "I mostly read science fiction"),
    ("paraphrase", "U: I sing in a choir on Thursdays.", "Is a choir singer (Thursdays)", (1,),
     "I sing in a choir on Thursdays"),
    ("paraphrase", "U: I paint watercolours on weekends.", "Paints watercolours at the weekend", (1,),
     "I paint watercolours on weekends"),
    ("paraphrase", "U: I drive a Volvo.", "Has a Volvo car", (1,), "I drive a Volvo"),
    ("paraphrase", "U: My mum lives in Porto.", "Mother lives in Porto", (1,), "My mum lives in Porto"),
    ("paraphrase", "U: my dad is retired now", "Father is retired", (1,), "my dad is retired"),
    ("paraphrase", "U: My sister Lena is a lawyer in Berlin.", "Sister Lena is an attorney in Berlin", (1,),
     "My sister Lena is a lawyer in Berlin"),
    ("paraphrase", "U: I swim at the lake every summer", "Swims in the lake each summer", (1,),
     "I swim at the lake every summer"),
    ("paraphrase", "U: I grow tomatoes on my balcony.", "Gardens on the balcony (tomatoes)", (1,),
     "I grow tomatoes on my balcony"),
    ("paraphrase", "U: I work from home on Fridays.", "Works remotely on Fridays from home", (1,),
     "I work from home on Fridays"),
    ("paraphrase", "U: I take photos of birds as a hobby", "Birds photography is a hobby", (1,),
     "I take photos of birds as a hobby"),
    ("paraphrase", "U: I'm into board games, Catan especially", "Enjoys board games, especially Catan", (1,),
     "I'm into board games, Catan especially"),
    ("paraphrase", "U: Please don't use emojis in replies.", "Does not want emojis in replies", (1,),
     "Please don't use emojis in replies"),
    ("paraphrase", "U: I'm not a morning person at all", "Is not a morning person", (1,),
     "I'm not a morning person"),
    ("paraphrase", "U: honestly I never drink alcohol", "Doesn't drink alcohol", (1,), "I never drink alcohol"),
    ("paraphrase", "U: I'm lactose intolerant", "Is intolerant to lactose", (1,), "I'm lactose intolerant"),
    ("paraphrase", "U: I avoid dairy, it makes me sick", "Avoids dairy products", (1,), "I avoid dairy"),
    ("paraphrase", "U: My boss Priya wants the report by Friday.", "Manager is Priya", (1,), "My boss Priya"),
    ("paraphrase", "U: I have two kids, both in primary school", "Has 2 children in primary school", (1,),
     "I have two kids, both in primary school"),
    ("paraphrase", "U: I'm married to Jonas.", "Spouse: Jonas", (1,), "I'm married to Jonas"),
    ("paraphrase", "U: I go to bed around 11 pm.", "Bedtime: 11 pm", (1,), "I go to bed around 11 pm"),
    ("paraphrase", "U: I'm a nurse on night shifts.", "Works night shifts as a nurse", (1,),
     "I'm a nurse on night shifts"),
    ("paraphrase", "U: I study medicine at Leiden.", "Medical student at Leiden", (1,), "I study medicine at Leiden"),
    ("paraphrase", "U: I'm training for a marathon.", "Runner training for a marathon", (1,),
     "I'm training for a marathon"),
    ("paraphrase", "U: I play the piano a little", "Plays piano", (1,), "I play the piano a little"),
    ("paraphrase", "U: I'm a drummer in a garage band", "Plays drums in a garage band", (1,),
     "I'm a drummer in a garage band"),
    ("paraphrase", "U: I love cooking Thai food", "Enjoys cooking Thai food", (1,), "I love cooking Thai food"),
    ("paraphrase", "U: my dog Pixel is a border collie", "Owns a border collie named Pixel", (1,),
     "my dog Pixel is a border collie"),
    ("paraphrase", "U: We adopted a puppy called Bruno.", "Has a dog, Bruno", (1,), "We adopted a puppy called Bruno"),
    ("paraphrase", "U: I commute by train to Utrecht.", "Commutes by train to Utrecht", (1,),
     "I commute by train to Utrecht"),
    ("paraphrase", "U: I'd rather you answer in English.", "Wants answers in English", (1,),
     "I'd rather you answer in English"),
    ("paraphrase", "U: I own a red kayak", "Has a red kayak", (1,), "I own a red kayak"),
    ("paraphrase", "U: Python is the language I use at work", "Uses Python at work", (1,),
     "Python is the language I use at work"),
    ("paraphrase", "U: I moved to Lyon last month.", "Lives in Lyon", (1,), "I moved to Lyon"),
    ("paraphrase", "U: I'm based in Toronto.", "Lives in Toronto", (1,), "I'm based in Toronto"),
    ("paraphrase", "U: I'm from Chile originally", "Originally from Chile", (1,), "I'm from Chile originally"),
    ("paraphrase", "U: i WORK AT Ikea", "Works at IKEA", (1,), "i work at ikea"),
    ("paraphrase", "U: I do yoga before bed.", "Does yoga at bedtime", (1,), "I do yoga before bed"),
    ("paraphrase", "U: I like my answers with code examples", "Likes code examples in answers", (1,),
     "I like my answers with code examples"),
    ("paraphrase", "U: I hate long meetings", "Dislikes long meetings", (1,), "I hate long meetings"),
    ("paraphrase", "U: I'm a huge Arsenal fan", "Supports Arsenal (big fan)", (1,), "I'm a huge Arsenal fan"),
    # --- key: value ---
    ("keyvalue", "U: Hi! I'm Sam, by the way.", "Name: Sam", (1,), "I'm Sam"),
    ("keyvalue", "U: I'm 34 and tired", "Age: 34", (1,), "I'm 34"),
    ("keyvalue", "U: I turned 41 in March", "Age: 41", (1,), "I turned 41"),
    ("keyvalue", "U: I live in Lisbon.", "Location: Lisbon", (1,), "I live in Lisbon"),
    ("keyvalue", "U: I work as a pharmacist.", "Occupation: pharmacist", (1,), "I work as a pharmacist"),
    ("keyvalue", "U: my favourite colour is green", "Favourite colour: green", (1,), "my favourite colour is green"),
    ("keyvalue", "U: my daughter is called Mia", "Daughter: Mia", (1,), "my daughter is called Mia"),
    ("keyvalue", "U: my email is sam@example.org", "Email: sam@example.org", (1,), "my email is sam@example.org"),
    ("keyvalue", "U: I was born in Cork.", "Birthplace: Cork", (1,), "I was born in Cork"),
    ("keyvalue", "U: my native language is Dutch", "Native language: Dutch", (1,), "my native language is Dutch"),
    ("keyvalue", "U: I usually have lunch at 1pm", "Lunch time: 13:00", (1,), "I usually have lunch at 1pm"),
    ("keyvalue", "U: I'm a vegan", "Diet: vegan", (1,), "I'm a vegan"),
    ("keyvalue", "U: we call our cat Miso", "Cat's name: Miso", (1,), "we call our cat Miso"),
    ("keyvalue", "U: I go to sleep at midnight", "Sleep: midnight", (1,), "I go to sleep at midnight"),
    ("keyvalue", "U: I'm a Python developer", "Role: Python developer", (1,), "I'm a Python developer"),
    ("keyvalue", "U: my phone is a Pixel 8", "Phone: Pixel 8", (1,), "my phone is a Pixel 8"),
    ("keyvalue", "U: my employer is Siemens", "Employer: Siemens", (1,), "my employer is Siemens"),
    ("keyvalue", "U: my birthday is 12 May", "Birthday: May 12", (1,), "my birthday is 12 May"),
    ("keyvalue", "U: i drink green tea mostly", "Drink: green tea", (1,), "i drink green tea mostly"),
    ("keyvalue", "U: I'd like replies in bullet points", "Reply style: bullet points", (1,),
     "I'd like replies in bullet points"),
    # --- merges of two messages ---
    ("merge", "U: I keep bees.\nA: How many hives?\nU: Two, behind the shed.", "Keeps two hives of bees behind the shed",
     (1, 3), "I keep bees … Two, behind the shed"),
    ("merge", "U: I live in Lyon.\nA: Nice city.\nU: I work at a bakery there.", "Lives in Lyon and works at a bakery",
     (1, 3), "I live in Lyon ... I work at a bakery"),
    ("merge", "U: My daughter Mia is 7.\nU: She loves drawing.", "Daughter Mia, 7, loves drawing", (1, 2),
     "My daughter Mia is 7 … She loves drawing"),
    ("merge", "U: I play the cello.\nU: and the piano", "Plays cello and piano", (1, 2),
     "I play the cello … and the piano"),
    ("merge", "U: I run.\nA: How far?\nU: About 10 km on Sundays", "Runs about 10 km on Sundays", (1, 3),
     "I run … About 10 km on Sundays"),
    ("merge", "U: I have a cat.\nU: Her name is Miso.", "Has a cat named Miso", (1, 2),
     "I have a cat. Her name is Miso"),
    ("merge", "U: I'm allergic to peanuts.\nU: also to shellfish", "Allergic to peanuts and shellfish", (1, 2),
     "I'm allergic to peanuts … also to shellfish"),
    ("merge", "U: I'm learning Spanish.\nA: Why?\nU: We're moving to Madrid next year.",
     "Learning Spanish for a move to Madrid", (1, 3), "I'm learning Spanish … moving to Madrid"),
    ("merge", "U: My brother Tom lives in Leeds.\nU: He is a chef.", "Brother Tom is a chef in Leeds", (1, 2),
     "My brother Tom lives in Leeds … He is a chef"),
    ("merge", "U: I wake up at 6.\nU: then I go running", "Wakes at 6 and runs", (1, 2),
     "I wake up at 6 … then I go running"),
    ("merge", "U: I drive a Volvo.\nU: it's red", "Drives a red Volvo", (1, 2), "I drive a Volvo … it's red"),
    ("merge", "U: I work at Siemens.\nU: as a data analyst", "Data analyst at Siemens", (1, 2),
     "I work at Siemens … as a data analyst"),
    # --- English / Chinese code-switching ---
    ("codeswitch", "U: 我养了一只猫，叫 Miso", "Has a cat named Miso", (1,), "我养了一只猫，叫 Miso"),
    ("codeswitch", "U: 我每天早上五点起床", "Wake-up time: 5 am", (1,), "我每天早上五点起床"),
    ("codeswitch", "U: 我住在上海", "Lives in Shanghai", (1,), "我住在上海"),
    ("codeswitch", "U: I live in 北京 now", "Lives in Beijing", (1,), "I live in 北京"),
    ("codeswitch", "U: 我是程序员, mostly Rust", "Programmer who writes Rust", (1,), "我是程序员, mostly Rust"),
    ("codeswitch", "U: 我喜欢喝咖啡", "Likes coffee", (1,), "我喜欢喝咖啡"),
    ("codeswitch", "U: I really 讨厌香菜", "Dislikes cilantro", (1,), "I really 讨厌香菜"),
    ("codeswitch", "U: 我女儿叫 Mia", "Daughter: Mia", (1,), "我女儿叫 Mia"),
    ("codeswitch", "U: 我会拉大提琴", "Plays the cello", (1,), "我会拉大提琴"),
    ("codeswitch", "U: 周末我喜欢 hiking", "Likes hiking on weekends", (1,), "周末我喜欢 hiking"),
    ("codeswitch", "U: 我对花生过敏", "Allergic to peanuts", (1,), "我对花生过敏"),
    ("codeswitch", "U: my wife 是老师", "Wife is a teacher", (1,), "my wife 是老师"),
    ("codeswitch", "U: I'm learning 中文 every evening", "Learning Chinese (中文) every evening", (1,),
     "I'm learning 中文 every evening"),
    ("codeswitch", "U: 我在公司用 Python", "Uses Python at work", (1,), "我在公司用 Python"),
    ("codeswitch", "U: I want 简短的回答 please", "Prefers short answers", (1,), "I want 简短的回答"),
    ("codeswitch", "U: 我喜欢跑步", "我喜欢跑步", (1,), "我喜欢跑步"),
    ("codeswitch", "U: 我住在上海浦东", "住在上海", (1,), "我住在上海浦东"),
    ("codeswitch", "U: 我有两个孩子", "Has 2 kids", (1,), "我有两个孩子"),
    # --- numbers, times and dates restated ---
    ("numbers", "U: I get up at 5:00 every day", "Wakes up at 5 am daily", (1,), "I get up at 5:00 every day"),
    ("numbers", "U: I start work at 9.", "Starts work at 9:00", (1,), "I start work at 9"),
    ("numbers", "U: I finish at 5:30pm", "Finishes work at 17:30", (1,), "I finish at 5:30pm"),
    ("numbers", "U: I have three cats", "Has 3 cats", (1,), "I have three cats"),
    ("numbers", "U: I have 2 dogs", "Has two dogs", (1,), "I have 2 dogs"),
    ("numbers", "U: I'm twenty-nine", "Age: 29", (1,), "I'm twenty-nine"),
    ("numbers", "U: My birthday is 2024-03-05? no wait, March 5th, 1990", "Born on 5 March 1990", (1,),
     "March 5th, 1990"),
    ("numbers", "U: I was born on 1990-03-05", "Birthday: March 5, 1990", (1,), "I was born on 1990-03-05"),
    ("numbers", "U: we moved here in 2019", "Moved in 2019", (1,), "we moved here in 2019"),
    ("numbers", "U: I run 10k every Sunday", "Runs 10 km every Sunday", (1,), "I run 10k every Sunday"),
    ("numbers", "U: My salary is 1,200 a week", "Earns 1200 a week", (1,), "My salary is 1,200 a week"),
    ("numbers", "U: I sleep at 11pm", "Sleeps at 23:00", (1,), "I sleep at 11pm"),
    ("numbers", "U: Lunch is at noon for me", "Lunch at 12:00", (1,), "Lunch is at noon"),
    ("numbers", "U: I was born on the 3rd of July", "Birthday: July 3", (1,), "I was born on the 3rd of July"),
    ("numbers", "U: my flight is on 2026-12-24", "Flight on 24 December 2026", (1,), "my flight is on 2026-12-24"),
    ("numbers", "U: I get up at ５ am", "Wake-up time: 5 am", (1,), "I get up at ５ am"),
    ("numbers", "U: 我的生日是3月5日", "Birthday: March 5", (1,), "我的生日是3月5日"),
    ("numbers", "U: I ran a marathon in 3:45", "Marathon time 3:45", (1,), "I ran a marathon in 3:45"),
    ("numbers", "U: I'm 180 cm tall", "Height: 180 cm", (1,), "I'm 180 cm tall"),
    ("numbers", "U: I have been vegan for 10 years", "Vegan for ten years", (1,), "vegan for 10 years"),
    # --- slips a model makes in the quote (case, punctuation, width, one word) ---
    ("paraphrase", "U: I keep BEES in the garden!!", "Keeps bees", (1,), "i keep bees in the garden"),
    ("paraphrase", "U: I keep bees, you know, in the garden", "Keeps bees in the garden", (1,),
     "I keep bees you know in the garden"),
    ("paraphrase", "U: I really do keep a lot of bees in my own back garden", "Keeps bees in the garden", (1,),
     "I really do keep a lot of bees in the back garden"),
    ("paraphrase", "U: I play the cello", "Is a cellist", (1,), "“I play the cello.”"),
    ("paraphrase", "U: I'm a night owl, I work best after midnight",
     "Works best after midnight", (1,), "I work best after midnight"),
    # the quote cites the wrong message number, but it is there, in another one
    ("paraphrase", "U: hello\nU: I keep bees in the garden", "Keeps bees", (1,), "I keep bees in the garden"),
    # an update: the old wording supports the new one together with the quote
    ("paraphrase", "U: we moved from Lyon to Grenoble", "Lives in Grenoble (moved from Lyon)", (1,),
     "we moved from Lyon to Grenoble"),
]

_UPDATES = [
    Case("paraphrase", _msgs("U: I now have two cats"), "Has two cats, Miso and Tofu", ((1,), "I now have two cats"),
         "Has cats named Miso and Tofu"),
    Case("paraphrase", (), "Is a hobby beekeeper", None, "Keeps bees in the garden"),
    Case("merge", (), "Lives in Lyon and works at a bakery", None, "Lives in Lyon . Works at a bakery"),
]

_INVENTED = [
    # --- no support ---
    ("none", "U: I keep bees in the garden.", "Has a dog", None),
    ("none", "U: I keep bees in the garden.", "Is a hobby beekeeper", None),
    ("none", "U: hello there", "Dislikes cilantro", (1,), "I dislike cilantro"),
    ("none", "U: I keep bees", "Writes code in Rust", (1,), "I write code in Rust"),
    ("none", "U: I like tea", "Has a cat named Miso", (1,), "I like tea"),
    ("none", "U: I like tea", "Is a cellist", (1,), "I like tea"),
    ("none", "U: I play the cello", "Plays the guitar", (1,), "I play the cello"),
    ("none", "U: I have a cat", "Has a dog", (1,), "I have a cat"),
    ("none", "U: I like coffee", "Likes coffee and tea", (1,), "I like coffee"),
    ("none", "U: I go running", "Runs marathons", (1,), "I go running"),
    ("none", "U: I live in Lyon", "Owns a house in Lyon", (1,), "I live in Lyon"),
    ("none", "U: I keep bees", "Sells honey", (1,), "I keep bees"),
    ("none", "U: I am learning Japanese", "Is fluent in Japanese", (1,), "I am learning Japanese"),
    ("none", "U: I work at a bakery", "Owns a bakery", (1,), "I work at a bakery"),
    ("none", "U: I have two kids", "Has two kids and a dog", (1,), "I have two kids"),
    ("none", "U: I like hiking", "Is a mountain guide", (1,), "I like hiking"),
    ("none", "U: I read a lot", "Writes novels", (1,), "I read a lot"),
    ("none", "U: 我喜欢喝茶", "Likes coffee", (1,), "我喜欢喝茶"),
    ("none", "U: 我养了一只猫", "Has a dog", (1,), "我养了一只猫"),
    ("none", "U: I keep bees", "Keeps bees", (1,), "I keep wasps"),
    ("none", "U: hi\nA: hello", "Keeps bees", (1,), "I keep bees in the garden"),
    ("none", "U: I keep bees", "Keeps bees", (1,), ""),
    ("none", "U: I keep bees", "Keeps bees", (4,), "I keep bees"),
    ("none", "U: I like jazz", "Likes jazz", (0,), "I like jazz"),
    ("none", "U: I have a cat", "Is allergic to cats", (1,), "I have a cat"),
    # --- another name ---
    ("name", "U: My daughter Greta starts school.", "Daughter Mia starts school", (1,),
     "My daughter Greta starts school"),
    ("name", "U: my cat is called Miso", "Has a cat named Tofu", (1,), "my cat is called Miso"),
    ("name", "U: I work with Greta on Beacon", "Works with Mia on Beacon", (1,), "I work with Greta on Beacon"),
    ("name", "U: my partner Alex is a nurse", "Partner Sam is a nurse", (1,), "my partner Alex is a nurse"),
    ("name", "U: My boss is Priya", "Boss: Anita", (1,), "My boss is Priya"),
    ("name", "U: I drive a Volvo", "Drives a Toyota", (1,), "I drive a Volvo"),
    ("name", "U: I work at Siemens", "Works at Bosch", (1,), "I work at Siemens"),
    ("name", "U: I'm a huge Arsenal fan", "Supports Chelsea", (1,), "I'm a huge Arsenal fan"),
    ("name", "U: 我女儿叫 Mia", "Daughter: Greta", (1,), "我女儿叫 Mia"),
    ("name", "U: I use Python at work", "Uses Rust at work", (1,), "I use Python at work"),
    ("name", "U: My sister Lena lives in Berlin", "Sister Anna lives in Berlin", (1,),
     "My sister Lena lives in Berlin"),
    ("name", "U: my dog Pixel is a collie", "Dog named Bruno", (1,), "my dog Pixel is a collie"),
    # --- another number ---
    ("number", "U: I wake up at 5 am", "Wake-up time: 6 am", (1,), "I wake up at 5 am"),
    ("number", "U: I wake up at 5 am", "Wakes up at 5 pm", (1,), "I wake up at 5 am"),
    ("number", "U: I'm 34", "Age: 43", (1,), "I'm 34"),
    ("number", "U: I have three cats", "Has 4 cats", (1,), "I have three cats"),
    ("number", "U: I have two kids", "Has three children", (1,), "I have two kids"),
    ("number", "U: I run 10k every Sunday", "Runs 21 km every Sunday", (1,), "I run 10k every Sunday"),
    ("number", "U: I go to the gym three times a week", "Goes to the gym 5 times a week", (1,),
     "I go to the gym three times a week"),
    ("number", "U: I'm 180 cm tall", "Height: 185 cm", (1,), "I'm 180 cm tall"),
    ("number", "U: 我每天早上五点起床", "Wake-up time: 6 am", (1,), "我每天早上五点起床"),
    ("number", "U: I keep bees", "Keeps 12 hives", (1,), "I keep bees"),
    ("number", "U: I finish at 5:30pm", "Finishes work at 18:30", (1,), "I finish at 5:30pm"),
    # --- another date ---
    ("date", "U: my birthday is 12 May", "Birthday: May 21", (1,), "my birthday is 12 May"),
    ("date", "U: my birthday is 12 May", "Birthday: June 12", (1,), "my birthday is 12 May"),
    ("date", "U: I was born on 1990-03-05", "Born in 1991", (1,), "I was born on 1990-03-05"),
    ("date", "U: we moved here in 2019", "Moved in 2021", (1,), "we moved here in 2019"),
    ("date", "U: my flight is on 2026-12-24", "Flight on December 25", (1,), "my flight is on 2026-12-24"),
    ("date", "U: I keep bees", "Started beekeeping in 2015", (1,), "I keep bees"),
    ("date", "U: 我的生日是3月5日", "Birthday: April 5", (1,), "我的生日是3月5日"),
    # --- another place ---
    ("place", "U: I live in Lyon", "Lives in Paris", (1,), "I live in Lyon"),
    ("place", "U: I moved to Lyon last month", "Moved to Marseille", (1,), "I moved to Lyon"),
    ("place", "U: My mum lives in Porto", "Mother lives in Lisbon", (1,), "My mum lives in Porto"),
    ("place", "U: I was born in Cork", "Birthplace: Dublin", (1,), "I was born in Cork"),
    ("place", "U: 我住在上海", "Lives in Beijing", (1,), "我住在上海"),
    ("place", "U: I commute by train to Utrecht", "Commutes to Amsterdam", (1,), "I commute by train to Utrecht"),
    ("place", "U: I love hiking in the Alps", "Hikes in the Pyrenees", (1,), "I love hiking in the Alps"),
    ("place", "U: I keep bees in the garden", "Keeps bees in Norway", (1,), "I keep bees in the garden"),
    # --- the opposite ---
    ("opposite", "U: I don't eat meat", "Eats meat", (1,), "I don't eat meat"),
    ("opposite", "U: I like coffee", "Does not like coffee", (1,), "I like coffee"),
    ("opposite", "U: I never drink alcohol", "Drinks alcohol", (1,), "I never drink alcohol"),
    ("opposite", "U: I hate long meetings", "Likes long meetings", (1,), "I hate long meetings"),
    ("opposite", "U: I love cilantro", "Dislikes cilantro", (1,), "I love cilantro"),
    ("opposite", "U: please keep answers short", "Prefers long answers", (1,), "please keep answers short"),
    # --- inferred from the assistant's own words ---
    ("inferred", "U: what should I plant?\nA: Since you keep bees, lavender is good.", "Keeps bees", (2,),
     "you keep bees"),
    ("inferred", "U: any tips for mornings?\nA: As an early riser, you could journal.", "Is an early riser", (2,),
     "As an early riser"),
    ("inferred", "U: what about dinner?\nA: Since you are vegetarian, try a curry.", "Is vegetarian", (2,),
     "you are vegetarian"),
    ("inferred", "U: recommend a book\nA: You seem to love science fiction.", "Loves science fiction", (2,),
     "You seem to love science fiction"),
    ("inferred", "U: my back hurts\nA: Maybe from your long runs?", "Runs long distances", (2,), "your long runs"),
    ("inferred", "U: what is the weather\nA: In Lyon it is sunny.", "Lives in Lyon", (2,), "In Lyon it is sunny"),
    ("inferred", "U: help me write an email\nA: Sure, I know you work at Siemens.", "Works at Siemens", (2,),
     "you work at Siemens"),
    ("inferred", "U: 推荐一首歌\nA: 你喜欢大提琴，可以听巴赫。", "Likes the cello", (2,), "你喜欢大提琴"),
]


def said() -> list[Case]:
    """Facts the user said, reworded, each with a good receipt (and updates whose old wording
    says it): each must be written."""
    out = [_c(kind, conv, fact, nums, quote) for kind, conv, fact, nums, quote in _SAID]
    out[-1] = Case(out[-1].kind, out[-1].messages, out[-1].fact, out[-1].receipt, "Lives in Lyon")
    return out + _UPDATES


def invented() -> list[Case]:
    """Facts nobody said (or only the assistant): none may be written as stated."""
    out = []
    for row in _INVENTED:
        kind, conv, fact, nums, *quote = row
        out.append(_c(kind, conv, fact, nums, quote[0] if quote else ""))
    return out
