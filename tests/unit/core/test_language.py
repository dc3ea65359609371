"""Languages and words whatever the script (apps/core/language.py), and what uses them: the lexical
query, the "not found" coverage test, the prompt's language and Chinese names."""
# ruff: noqa: RUF001 - Chinese text has full-width punctuation

from __future__ import annotations

from dataclasses import replace

from apps.answers.lexical import CJK_TEXT_INDEX, TEXT_INDEX, lexical_index, lexical_query
from apps.answers.prompt import NOT_FOUND, NOT_FOUND_ZH, SYSTEM, SYSTEM_ZH, not_found_text, prompt_assemble
from apps.answers.support import answer_support, evidence_measure, says_not_found
from apps.answers.types import Source
from apps.core.language import chinese_names, cjk_share, detect_language, main_language, words
from apps.ingest.chunking import split_sentences
from apps.ingest.extraction import SpacyExtractor

ZH = (
    "检索增强生成的延迟\n\n在我们的测试中，重排序阶段的平均延迟为 38 毫秒，向量检索阶段占总延迟的百分之十二。"
    "马云在杭州创办了阿里巴巴公司。"
)


def source(text: str, rerank: float = 0.7) -> Source:
    found = Source(1, "c1", "chunk", "d1", "zh/latency.txt", "lab", text, "", 1.0, (), tuple(split_sentences(text)))
    return replace(found, rerank_score=rerank)


def test_chinese_is_cut_into_dictionary_words_and_other_scripts_into_letter_runs() -> None:
    found = words("重排序阶段的平均延迟是多少毫秒？BM25 Recall")
    assert {"排序", "阶段", "平均", "延迟", "毫秒", "bm25", "recall"} <= set(found)
    assert words("The Moss Society, founded in 1903.") == ["the", "moss", "society", "founded", "in", "1903"]


def test_languages_of_texts_and_of_a_whole_document() -> None:
    assert detect_language(ZH) == "zh" and detect_language("The reranking stage takes 38 ms on average.") == "en"
    assert cjk_share(ZH) > 0.8 and cjk_share("no Chinese here") == 0.0
    assert main_language([("en", 100), ("zh", 900), ("und", 5000)]) == "zh"
    assert main_language([("und", 10)]) == "und"


def test_a_chinese_question_queries_the_cjk_index_with_its_words() -> None:
    query = lexical_query("重排序阶段的平均延迟是多少毫秒？")
    assert "延迟" in query.split() and "毫秒" in query.split() and "?" not in query
    assert lexical_index("重排序阶段的平均延迟是多少毫秒？") == CJK_TEXT_INDEX
    assert lexical_index("What is the average latency?") == TEXT_INDEX


def test_coverage_counts_chinese_words_and_is_not_applied_across_scripts() -> None:
    covered = evidence_measure("重排序阶段的平均延迟是多少毫秒？", [source(ZH)])
    assert covered.coverage == 1.0
    missing = evidence_measure("量子计算机的冷却温度是多少开尔文？", [source(ZH)])
    assert missing.coverage < 0.3
    # An English question over Chinese sources: its words cannot be looked for; the similarity decides.
    assert evidence_measure("What is the average latency of reranking?", [source(ZH)]).coverage == 1.0


def test_a_chinese_answer_is_supported_by_its_chinese_words_and_an_english_one_is_not_judged_by_them() -> None:
    assert answer_support("38 毫秒", ZH, "重排序阶段的平均延迟是多少毫秒？") == 1.0
    assert answer_support("杭州", ZH, "马云在哪里创办了阿里巴巴？") == 1.0
    assert answer_support("北京", ZH, "马云在哪里创办了阿里巴巴？") == 0.0
    assert answer_support("38 milliseconds", ZH, "What is the average reranking latency?") == 1.0


def test_a_chinese_question_gets_the_chinese_prompt_and_not_found_text() -> None:
    prompt = prompt_assemble(question="重排序阶段的平均延迟是多少毫秒？", sources=[source(ZH)], count_tokens=len)
    assert prompt.system == SYSTEM_ZH and "38 毫秒" in prompt.user
    english = prompt_assemble(question="What is the reranking latency?", sources=[source(ZH)], count_tokens=len)
    assert english.system == SYSTEM
    assert not_found_text("重排序的延迟是多少？") == NOT_FOUND_ZH and not_found_text("Where?") == NOT_FOUND
    assert says_not_found(NOT_FOUND_ZH) and says_not_found(NOT_FOUND)


def test_chinese_names_come_from_rjieba_tags_with_their_offsets() -> None:
    names = chinese_names(ZH)
    assert ("马云", "PERSON") in {(name, label) for _, _, name, label in names}
    assert all(ZH[start:end] == name for start, end, name, _ in names)
    [extraction] = SpacyExtractor().extract([ZH])
    found = {(mention.text, mention.label) for mention in extraction.mentions}
    assert {("马云", "PERSON"), ("杭州", "GPE"), ("阿里巴巴公司", "ORG")} <= found
    assert extraction.relations and all(relation.predicate is None for relation in extraction.relations)
    assert [ZH[start:end][-1] for start, end in extraction.sentences][-2:] == ["。", "。"]


def test_a_chinese_first_sentence_is_evidence_not_a_title_line() -> None:
    text = "黑豹队的防守只丢了 308分，在联赛中排名第六。他的队友马里奥·爱迪生贡献了 6½ 次擒杀。"
    prompt = prompt_assemble(question="黑豹队的防守丢了多少分？", sources=[source(text)], count_tokens=len)
    label, excerpt = prompt.user.split("\n\n")[1].split("\n", 1)
    assert label == "[1] latency" and "308分" in excerpt
    titled = "超级碗50\n\n黑豹队的防守只丢了 308分。"
    assert (
        prompt_assemble(question="多少分？", sources=[source(titled)], count_tokens=len)
        .user.split("\n\n")[1]
        .startswith("[1] 超级碗50\n")
    )
