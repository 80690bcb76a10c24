"""Labelled text samples and synthetic pages for the language benchmark, the tests and the 1M-page benchmark.

Pure and deterministic (a seeded `random.Random`): no network, no files. The samples are random
sentences drawn from a few hand-written sentences per language, cut to different lengths, some of
them with the English menu words ("Home", "Login", "Copyright") that pages of every language carry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SENTENCES: dict[str, tuple[str, ...]] = {
    "ko": (
        "서울대학교 전산원은 학내 정보통신망을 운영하고 있습니다.",
        "이번 학기 수강 신청은 다음 주 월요일부터 시작됩니다.",
        "자세한 내용은 학과 사무실로 문의하시기 바랍니다.",
        "우리 연구실은 병렬 처리와 컴퓨터 구조를 연구합니다.",
        "오늘 날씨가 맑고 따뜻해서 공원에 사람이 많았다.",
        "회원 가입을 하시면 더 많은 서비스를 이용하실 수 있습니다.",
        "국내 인터넷 사용자는 빠르게 늘어나고 있다.",
        "도서관은 주말에도 오후 여섯 시까지 문을 엽니다.",
        "새로운 웹 로봇은 수집 속도를 두 배 이상 높였다.",
        "게시판에 글을 올리기 전에 이용 약관을 읽어 주세요.",
        "저희 회사는 고객의 개인정보를 소중하게 생각합니다.",
        "졸업생 여러분의 앞날에 행운이 함께하기를 바랍니다.",
    ),
    "en": (
        "The computing center operates the campus network and the mail servers.",
        "Registration for the spring semester opens next Monday morning.",
        "Please contact the department office for more information.",
        "Our laboratory studies parallel processing and computer architecture.",
        "The weather was clear and warm, so the park was full of people.",
        "Members can use many more services after signing up.",
        "The number of internet users in the country is growing quickly.",
        "The library stays open until six in the evening on weekends.",
        "The new web robot more than doubled the collection speed.",
        "Please read the terms of use before posting on the board.",
        "Our company values the privacy of every customer.",
        "We wish all of our graduates the best of luck in the future.",
    ),
    "ja": (
        "東京大学の情報基盤センターは学内ネットワークを運用しています。",
        "今学期の履修登録は来週の月曜日から始まります。",
        "詳しくは学科事務室までお問い合わせください。",
        "私たちの研究室では並列処理とコンピュータアーキテクチャを研究しています。",
        "今日は晴れて暖かかったので、公園にはたくさんの人がいました。",
        "会員登録をするともっと多くのサービスを利用できます。",
        "国内のインターネット利用者は急速に増えています。",
        "図書館は週末も午後六時まで開いています。",
        "新しいウェブロボットは収集速度を二倍以上に高めました。",
        "掲示板に書き込む前に利用規約をお読みください。",
        "当社はお客様の個人情報を大切にしています。",
        "卒業生の皆さんのこれからのご活躍をお祈りします。",
    ),
    "zh": (
        "北京大学计算中心负责管理校园网络和电子邮件服务器。",
        "本学期的选课将于下周一开始。",
        "详细情况请向系办公室咨询。",
        "我们实验室主要研究并行处理和计算机体系结构。",
        "今天天气晴朗温暖，公园里有很多人。",
        "注册成为会员后可以使用更多的服务。",
        "国内的互联网用户正在迅速增加。",
        "图书馆周末也开放到下午六点。",
        "新的网络机器人把收集速度提高了两倍以上。",
        "在论坛发帖之前请先阅读使用条款。",
        "本公司非常重视客户的个人信息。",
        "祝愿各位毕业生前程似锦，万事如意。",
    ),
    "de": (
        "Das Rechenzentrum betreibt das Campusnetz und die Mailserver der Universität.",
        "Die Anmeldung für das Sommersemester beginnt am nächsten Montag.",
        "Weitere Informationen erhalten Sie im Sekretariat des Instituts.",
        "Unser Labor forscht über parallele Verarbeitung und Rechnerarchitektur.",
        "Das Wetter war klar und warm, deshalb war der Park voller Menschen.",
        "Nach der Registrierung können Mitglieder viele weitere Dienste nutzen.",
        "Die Zahl der Internetnutzer im Land wächst sehr schnell.",
        "Die Bibliothek ist auch am Wochenende bis achtzehn Uhr geöffnet.",
        "Der neue Webroboter hat die Geschwindigkeit mehr als verdoppelt.",
        "Bitte lesen Sie die Nutzungsbedingungen, bevor Sie etwas veröffentlichen.",
        "Unser Unternehmen schützt die Daten jedes einzelnen Kunden.",
        "Wir wünschen allen Absolventen viel Glück für die Zukunft.",
    ),
    "fr": (
        "Le centre de calcul gère le réseau du campus et les serveurs de messagerie.",
        "Les inscriptions pour le semestre de printemps ouvrent lundi prochain.",
        "Veuillez contacter le secrétariat du département pour plus d'informations.",
        "Notre laboratoire étudie le traitement parallèle et l'architecture des ordinateurs.",
        "Il faisait beau et chaud, alors le parc était plein de monde.",
        "Les membres inscrits peuvent utiliser beaucoup plus de services.",
        "Le nombre d'internautes dans le pays augmente très rapidement.",
        "La bibliothèque reste ouverte jusqu'à dix-huit heures le week-end.",
        "Le nouveau robot du web a plus que doublé la vitesse de collecte.",
        "Merci de lire les conditions d'utilisation avant de publier un message.",
        "Notre entreprise respecte la vie privée de chacun de ses clients.",
        "Nous souhaitons bonne chance à tous nos diplômés pour l'avenir.",
    ),
    "es": (
        "El centro de cómputo administra la red del campus y los servidores de correo.",
        "La inscripción para el semestre de primavera comienza el próximo lunes.",
        "Por favor, póngase en contacto con la secretaría del departamento.",
        "Nuestro laboratorio investiga el procesamiento paralelo y la arquitectura de computadoras.",
        "El día estaba despejado y cálido, así que el parque estaba lleno de gente.",
        "Los socios registrados pueden usar muchos más servicios.",
        "El número de usuarios de internet en el país crece muy rápido.",
        "La biblioteca permanece abierta hasta las seis de la tarde los fines de semana.",
        "El nuevo robot web duplicó con creces la velocidad de recolección.",
        "Lea las condiciones de uso antes de publicar en el foro, por favor.",
        "Nuestra empresa protege la privacidad de todos sus clientes.",
        "Deseamos mucha suerte a todos nuestros graduados en el futuro.",
    ),
    "ru": (
        "Вычислительный центр обслуживает сеть университета и почтовые серверы.",
        "Запись на весенний семестр начнётся в следующий понедельник.",
        "За подробной информацией обращайтесь в деканат факультета.",
        "Наша лаборатория изучает параллельные вычисления и архитектуру компьютеров.",
        "Погода была ясная и тёплая, поэтому в парке было много людей.",
        "После регистрации участники могут пользоваться многими другими услугами.",
        "Число пользователей интернета в стране быстро растёт.",
        "Библиотека работает до шести часов вечера даже по выходным.",
        "Новый веб-робот более чем вдвое увеличил скорость сбора страниц.",
        "Пожалуйста, прочитайте правила перед тем как писать на форуме.",
        "Наша компания бережно относится к личным данным каждого клиента.",
        "Желаем всем выпускникам удачи и успехов в будущем.",
    ),
    "pt": (
        "O centro de computação administra a rede do campus e os servidores de correio.",
        "As inscrições para o semestre de primavera começam na próxima segunda-feira.",
        "Para mais informações, entre em contato com a secretaria do departamento.",
        "O nosso laboratório pesquisa processamento paralelo e arquitetura de computadores.",
        "O dia estava limpo e quente, por isso o parque estava cheio de gente.",
        "Os sócios cadastrados podem usar muitos outros serviços.",
        "O número de usuários da internet no país cresce muito depressa.",
        "A biblioteca fica aberta até as seis da tarde nos fins de semana.",
        "O novo robô da web mais do que dobrou a velocidade de coleta.",
        "Leia os termos de uso antes de publicar no fórum, por favor.",
        "A nossa empresa protege a privacidade de todos os seus clientes.",
        "Desejamos muita sorte a todos os nossos formandos no futuro.",
    ),
}

LANGUAGES = tuple(SENTENCES)
# Boilerplate in English that pages of any language carry (menus, footers).
MENU_WORDS = ("Home", "Login", "Sitemap", "Copyright", "All rights reserved", "Contact", "English", "Search")
# Sample lengths in sentences: a few words (a link text, a title), one sentence, a paragraph, a page's
# worth of text.
LENGTHS = {"tiny": (1, 1), "short": (1, 1), "medium": (2, 3), "long": (5, 9)}


@dataclass(frozen=True)
class Sample:
    language: str
    length: str  # one of LENGTHS
    text: str


def _tiny(rng: random.Random, sentence: str, language: str) -> str:
    """Two or three words of a sentence; for Japanese and Chinese, six to ten characters."""
    if language in ("ja", "zh"):
        start = rng.randrange(0, max(1, len(sentence) - 10))
        return sentence[start : start + rng.randint(6, 10)]
    words = sentence.split()
    start = rng.randrange(0, max(1, len(words) - 3))
    return " ".join(words[start : start + rng.randint(2, 3)])


def _fragment(rng: random.Random, sentence: str, language: str) -> str:
    """A sentence, or for spaced languages sometimes a cut of it (at least four words)."""
    if language in ("ja", "zh"):
        return sentence
    words = sentence.split()
    if len(words) <= 5 or rng.random() < 0.5:
        return sentence
    start = rng.randrange(0, len(words) - 4)
    return " ".join(words[start : start + rng.randint(4, len(words) - start)])


def language_samples(per_language: int = 40, *, seed: int = 1) -> list[Sample]:
    """`per_language` labelled samples of each language in LANGUAGES, a quarter of each length; a quarter
    of the medium and long ones carry English menu words, as real pages do."""
    rng = random.Random(seed)
    out: list[Sample] = []
    kinds = list(LENGTHS)
    for language, sentences in SENTENCES.items():
        for i in range(per_language):
            kind = kinds[i % len(kinds)]
            lo, hi = LENGTHS[kind]
            if kind == "tiny":
                out.append(Sample(language, kind, _tiny(rng, rng.choice(sentences), language)))
                continue
            parts = [_fragment(rng, rng.choice(sentences), language) for _ in range(rng.randint(lo, hi))]
            if kind not in ("tiny", "short") and rng.random() < 0.25:
                parts.insert(0, " | ".join(rng.sample(MENU_WORDS, 3)))
                parts.append(rng.choice(MENU_WORDS))
            out.append(Sample(language, kind, " ".join(parts)))
    return out


def page_text(rng: random.Random, language: str, sentences: int = 3) -> str:
    """A paragraph of `language` for a synthetic page."""
    return " ".join(rng.choice(SENTENCES[language]) for _ in range(sentences))


# --- a synthetic crawl, for the benchmark ----------------------------------------------------------

NATIONAL_SUFFIXES = ("ac.kr", "co.kr", "co.kr", "co.kr", "go.kr", "or.kr", "ne.kr", "re.kr", "kr")
FOREIGN_SUFFIXES = ("com", "com", "net", "org", "edu", "gov", "mil", "co.jp", "com.cn", "de", "info")
# Content types by share of pages (the rest is HTML).
OTHER_TYPES = (
    ("image/gif", 0.05), ("image/jpeg", 0.03), ("application/pdf", 0.03), ("text/css", 0.02),
    ("text/plain", 0.01), ("video/mpeg", 0.005), ("audio/mpeg", 0.005),
)
_HOST_LANGUAGE = {"co.jp": "ja", "com.cn": "zh", "de": "de"}


def host_name(index: int, national_share: float = 0.8) -> str:
    """The name of synthetic host `index`: most under the national TLD, the rest foreign."""
    if (index * 7919) % 1000 < national_share * 1000:
        return f"www.site{index}.{NATIONAL_SUFFIXES[index % len(NATIONAL_SUFFIXES)]}"
    return f"www.site{index}.{FOREIGN_SUFFIXES[index % len(FOREIGN_SUFFIXES)]}"


def synthetic_pages(pages: int, *, hosts: int, seed: int = 7):
    """(host index, URL, Content-Type, body) for `pages` pages spread over `hosts` hosts: each host's root
    page first, a tenth of the rest under ~user directories, HTML in the host's language (Korean mostly,
    some English) naming two other hosts, sometimes an e-mail or FTP address; images, PDFs, style sheets,
    sound and video as their share in OTHER_TYPES. Bodies stay small (a few hundred bytes)."""
    rng = random.Random(seed)
    names = [host_name(h) for h in range(hosts)]
    for i in range(pages):
        h = i if i < hosts else rng.randrange(hosts)
        host = names[h]
        if i < hosts:
            path = "/"
        elif rng.random() < 0.1:
            path = f"/~user{rng.randrange(20)}/p{i}.html"
        else:
            path = f"/dir{rng.randrange(10)}/p{i}.html"
        r, ctype = rng.random(), "text/html"
        for candidate, p in OTHER_TYPES:
            if r < p:
                ctype = candidate
                break
            r -= p
        url = f"http://{host}{path}"
        if ctype not in ("text/html", "text/plain"):
            yield h, url, ctype, b"\x00binary\x00" + ctype.encode()
            continue
        suffix = host.split(".", 2)[2]
        language = _HOST_LANGUAGE.get(suffix) or ("ko" if suffix.endswith("kr") else "en")
        if rng.random() < 0.15:
            language = rng.choice(LANGUAGES)
        text = page_text(rng, language, 2)
        if ctype == "text/plain":
            yield h, url, ctype + "; charset=utf-8", text.encode()
            continue
        links = " ".join(f'<a href="http://{names[rng.randrange(hosts)]}/">{j}</a>' for j in range(2))
        extra = ""
        if rng.random() < 0.1:
            extra += f" webmaster@{host[4:]}"
        if rng.random() < 0.03:
            extra += f' <a href="ftp://ftp.{names[rng.randrange(hosts)][4:]}/pub">ftp</a>'
        body = f"<html><head><title>p{i}</title></head><body><p>{text}</p>{links}{extra}</body></html>"
        yield h, url, "text/html; charset=utf-8", body.encode()
