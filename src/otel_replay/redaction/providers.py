"""Provider credentials known by their prefix or a literal inside them: the token formats
public secret scanners list (see :mod:`otel_replay.redaction.patterns`)."""

from __future__ import annotations

import re
from typing import Final

from .shape import _HIDDEN, _NOT_AFTER_WORD, Shape

#: A token's body holds letters and digits both (ahead of it, up to a character not its own).
_MIXED = r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])"

#: Provider credentials known by their prefix (the public secret scanners' catalogues), as
#: (triggers, pattern).  Where a prefix is short or common the rest of the token must
#: follow its exact form.
_PROVIDER_TOKENS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("a3-",), r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}\b"),
    (("ops_eyj",), r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    (("p8e-",), r"(?i:p8e-)[A-Za-z0-9]{32}"),
    (("age-secret-key-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    (("ltai",), r"LTAI[A-Za-z0-9]{20}"),
    (("akcp",), r"AKCp[A-Za-z0-9]{69}"),
    (("cmvmd",), r"cmVmd[A-Za-z0-9]{59}"),
    (("absk",), r"ABSK[A-Za-z0-9+/]{100,}={0,2}"),
    (("bedrock-api-key-",), r"bedrock-api-key-[A-Za-z0-9+/=]{20,}"),
    (("4b1d",), r"4b1d[A-Za-z0-9]{38}"),
    (("clojars_",), r"(?i:clojars_)[A-Za-z0-9]{60}"),
    (("v1.0-",), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    (("dapi",), r"dapi[a-f0-9]{32}"),
    (("doo_v1_", "dop_v1_", "dor_v1_"), r"(?i:do[opr]_v1_)[a-fA-F0-9]{64}"),
    (("dp.pt.",), r"dp\.pt\.[A-Za-z0-9]{43}"),
    (("duffel_",), r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}"),
    (("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    (("ezak", "eztk"), r"EZ[AT]K[A-Za-z0-9]{54}"),
    (("eaaa", "eaac", "eaam"), r"EAA[ACM][A-Za-z0-9_-]{22,}"),
    (("flwseck_test-", "flwpubk_test-"), r"FLW(?:SECK|PUBK)_TEST-[A-Ha-h0-9]{12,}(?:-X)?"),
    (
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
        r"(?:fo1_[\w-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})",
    ),
    (("fio-u-",), r"fio-u-[A-Za-z0-9_=-]{64}"),
    (
        tuple(
            f"gl{kind}-"
            for kind in (
                "pat",
                "dt",
                "ffct",
                "ft",
                "imt",
                "agent",
                "oas",
                "ptt",
                "rt",
                "soat",
                "cbt",
            )
        ),
        r"gl(?:pat|dt|ffct|ft|imt|agent|oas|ptt|rt|soat|cbt)-[0-9A-Za-z_.-]{20,}",
    ),
    (("gr1348941",), r"GR1348941[\w-]{20}"),
    (("_gitlab_session=",), r"_gitlab_session=(?P<v>" + _HIDDEN + r"[0-9a-z]{32})"),
    (("eyjrijoi",), r"eyJrIjoi[A-Za-z0-9]{70,}={0,3}"),
    (("glc_", "glsa_"), r"gl(?:c_[A-Za-z0-9+/]{32,}={0,3}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"),
    (("pat",), r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),  # Airtable
    (("pat.", "sat."), r"[ps]at\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    (("hrku-aa",), r"HRKU-AA[0-9A-Za-z_-]{58}"),
    (("api_org_",), r"api_org_[A-Za-z]{34}"),
    (("ico-",), r"ico-[A-Za-z0-9]{32}"),
    (("s-s4t2ud-", "s-s4t2af-"), r"s-s4t2(?:ud|af)-[A-Fa-f0-9]{64}"),
    (("zxlk",), r"ZXlK[A-Za-z0-9+/]{40,}={0,2}"),  # a JSON Web Token, base64-encoded again
    (("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    (("ntn_",), r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    (("npm_",), r"npm_[A-Za-z0-9]{36}"),
    (("api-",), r"API-[A-Z0-9]{26}\b"),
    (("sha256~",), r"sha256~[\w-]{43}"),
    (("pplx-",), r"pplx-[A-Za-z0-9]{48}"),
    (("pscale_",), r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    (("pmak-",), r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}"),
    (("pnu_",), r"pnu_[A-Za-z0-9]{36}"),
    (("pul-",), r"pul-[a-f0-9]{40}"),
    (("pypi-ageichlwas5vcmc",), r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}"),
    (("rdme_",), r"rdme_[a-z0-9]{70}"),
    (("rubygems_",), r"rubygems_[a-f0-9]{48}"),
    (("tk-us-",), r"tk-us-[\w-]{48}"),
    (("sg.",), r"SG\.[A-Za-z0-9_.=-]{66}"),
    (("xkeysib-",), r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    (("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    (("sm_aat_", "sm_pat_", "sm_sat_"), r"sm_[aps]at_[A-Za-z0-9]{16}"),
    (("shippo_",), r"shippo_(?:live|test)_[A-Fa-f0-9]{40}"),
    (("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}"),
    (("sgp_",), r"sgp_(?:[A-Fa-f0-9]{16}_|local_)?[A-Fa-f0-9]{40}"),
    (("sq0atp-",), r"sq0atp-[\w-]{22,60}"),
    (("sk",), r"SK[0-9a-fA-F]{32}\b"),  # Twilio
    (("hvb.", "hvs."), r"hv[bs]\.[\w-]{90,300}"),
    (("xapp-",), r"xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+"),
    (("key-",), r"key-[a-f0-9]{32}\b"),  # Mailgun
    (("nrak-", "nrii-", "nrjs-"), r"NR(?:AK|II|JS)-[A-Za-z0-9-]{19,32}"),
    (("dnkey-",), r"dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    (("tfp_",), r"tfp_[A-Za-z0-9_.=-]{59}"),
    (("pk.",), r"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9]{22}"),
    (("atatt3",), r"ATATT3[A-Za-z0-9_=-]{186}"),
    (
        tuple(f"access-{env}-" for env in ("sandbox", "development", "production")),
        r"access-(?:sandbox|development|production)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}",
    ),
    (("squ_", "sqp_", "sqa_"), r"sq[upa]_[A-Za-z0-9]{40}"),
    (("aqvn",), r"AQVN[A-Za-z0-9_-]{35,38}"),
    (("t1.",), r"t1\.[A-Za-z0-9_-]+=*\.[A-Za-z0-9_-]{86}=*"),
    (("sl.",), r"sl\.[A-Za-z0-9_=-]{130,}"),
    (("webhook.office.com",), r"webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{20,}"),
    # Model and agent-tool providers: each body long, of its own alphabet, letters and
    # digits both where it is random (a name such as fw_update_firmware is prose).
    (("gsk_",), r"gsk_" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Groq
    (("xai-",), r"xai-" + _MIXED + r"[A-Za-z0-9]{60,}"),  # xAI
    (("r8_",), r"r8_" + _MIXED + r"[A-Za-z0-9]{30,}"),  # Replicate
    (("lsv2_pt_", "lsv2_sk_"), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),  # LangSmith
    (("tvly-",), r"tvly-(?:dev-|prod-)?" + _MIXED + r"[A-Za-z0-9]{24,}"),  # Tavily
    (("pcsk_",), r"pcsk_[A-Za-z0-9]{4,8}_" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Pinecone
    (("csk-",), r"csk-" + _MIXED + r"[A-Za-z0-9]{40,}"),  # Cerebras
    (("fw_",), r"fw_" + _MIXED + r"[A-Za-z0-9]{20,}"),  # Fireworks
    (("sk_",), r"sk_[a-f0-9]{48,}\b"),  # ElevenLabs
    (("sbp_",), r"sbp_(?:oauth_)?[a-f0-9]{40}\b"),  # Supabase
    (("pa-",), r"pa-(?=[\w-]*[A-Z])(?=[\w-]*[a-z])(?=[\w-]*[0-9])[A-Za-z0-9_-]{40,}"),  # Voyage
    (("fc-",), r"fc-[a-f0-9]{32}\b"),  # Firecrawl
    (("e2b_",), r"e2b_[a-f0-9]{40}\b"),  # E2B
    (("secret_",), r"secret_" + _MIXED + r"[A-Za-z0-9]{43}\b"),  # Notion
)

#: A token body of a set length (``[...]{42}``, ``[...]{35,38}``) at a pattern's end.
_SET_LENGTH_END = re.compile(r"\]\{\d+(?:,\d+)?\}$")


def _bounded(pattern: str) -> str:
    """``pattern``, ending where the letters and digits do when its body has a set length.

    The catalogues bound such tokens at a word's end: a longer run of letters and digits
    that only begins like one (a SHA-256 digest starting ``4b1d``, a stretch of base64
    after a ``/``) is not that token, and hiding its first characters would corrupt it.
    """
    return pattern + r"(?![A-Za-z0-9])" if _SET_LENGTH_END.search(pattern) else pattern


#: The provider shapes, in the catalogue's order (``VALUE_PATTERNS`` holds them after
#: private keys).
PROVIDER_SHAPES: Final = (
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03-...).
    Shape(("sk-",), _NOT_AFTER_WORD + r"sk-[A-Za-z0-9_-]{16,}"),
    # AWS access key ids.
    Shape(
        ("a3t", "akia", "asia", "abia", "acca"),
        _NOT_AFTER_WORD + r"(?:A3T[A-Z0-9]|A(?:KI|SI|BI|CC)A)[A-Z0-9]{16}\b",
    ),
    # GitHub tokens.
    Shape(
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _NOT_AFTER_WORD + r"gh[pousr]_[A-Za-z0-9]{30,}"
    ),
    Shape(("github_pat_",), _NOT_AFTER_WORD + r"github_pat_[A-Za-z0-9_]{20,}"),
    # Slack tokens and webhooks.
    Shape(("xox",), _NOT_AFTER_WORD + r"xox[a-z](?:\.xox[a-z])?-[A-Za-z0-9-]{8,}"),
    Shape(
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
    ),
    # Google API keys and OAuth access tokens.
    Shape(("aiza",), _NOT_AFTER_WORD + _bounded(r"AIza[0-9A-Za-z_-]{35}")),
    Shape(("ya29.",), _NOT_AFTER_WORD + r"ya29\.[0-9A-Za-z_-]{20,}"),
    # Stripe, Hugging Face.
    Shape(
        tuple(f"{k}_{env}_" for k in ("rk", "sk") for env in ("live", "test", "prod")),
        _NOT_AFTER_WORD + r"[rs]k_(?:live|test|prod)_[0-9A-Za-z]{10,}",
    ),
    Shape(("hf_",), _NOT_AFTER_WORD + r"hf_[A-Za-z0-9]{30,}"),
    # JSON Web Tokens.
    Shape(
        ("eyj",), _NOT_AFTER_WORD + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    ),
    *(
        Shape(triggers, _NOT_AFTER_WORD + _bounded(pattern))
        for triggers, pattern in _PROVIDER_TOKENS
    ),
    # Shapes known by a literal inside them, not at their start.
    Shape(("atlasv1",), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}", back=15),
    Shape(("_mmk",), r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", back=36),
    # Mailchimp: 32 hex digits and the data centre (-us12).
    Shape(("-us",), r"(?<![A-Za-z0-9])[a-f0-9]{32}-us[0-9]{1,2}\b", back=32),
    # Telegram bots: the bot's number (it stays), then the secret.
    Shape((":aa",), r"(?<=[0-9]{8}):(?P<v>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
    # Discord bots: the user id in base64, a time, then the secret (hidden from the time
    # on; a literal "." first, so this is searched for fast everywhere).
    Shape(
        (),
        r"\.(?=[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27})"
        r"(?:(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23}\.)"
        r"|(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{24}\.)"
        r"|(?<=(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{25}\.))"
        r"[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])",
        prefilter=r"[mno][a-z0-9_\-]{23,25}\.[a-z0-9_\-]{6}\.[a-z0-9_\-]{27}",
    ),
)
