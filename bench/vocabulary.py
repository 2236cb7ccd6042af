"""Fixed word lists for the synthetic KB, and Zipf-weighted sampling over them.

The lists are written by hand for this benchmark (technical-notes flavour) so
the generated corpus needs no download. A few hundred base words would make
every section look alike at 100,000 documents, so each list is extended with
compounds of two base words (`cachepool`, `設定管理`): real KBs have a long
tail of rare terms (product names, identifiers, compound nouns), and it is the
tail that makes retrieval possible at all.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

ENGLISH_WORDS: tuple[str, ...] = tuple(
    """
    the of and to in is for on that with as it be by this are from or at an
    which can when not use
    how why what where should must always never only also more less
    between after before during without within across through under over
    data file server cache query index build test
    deploy config user request response error log service cluster node
    network storage memory disk thread process queue message event stream
    batch job worker task schedule retry timeout limit rate token key value
    table column row schema migration backup restore snapshot replica shard
    partition leader follower commit rollback transaction lock latch mutex
    version release branch merge rebase review patch diff tag pipeline stage
    artifact image container pod volume secret policy role permission audit
    metric alert dashboard trace span sample histogram counter gauge label
    search rank score vector embedding model train infer evaluate feature
    dataset split shuffle epoch gradient loss optimizer weight bias layer
    kernel driver device buffer socket packet route proxy gateway balancer
    certificate handshake cipher hash signature verify encrypt decrypt
    password session cookie header payload endpoint client library module
    package dependency compiler linker runtime interpreter parser lexer
    grammar syntax format encode decode serialize compress archive upload
    download mirror registry manifest checksum digest fingerprint
    document section heading paragraph chapter note draft outline summary
    meeting decision proposal review owner team project roadmap milestone
    incident outage postmortem runbook oncall escalation severity priority
    customer account billing invoice payment refund subscription plan quota
    region zone datacenter rack host machine instance template terraform
    ansible kubernetes docker nginx postgres redis kafka spark python rust
    golang java typescript sqlite elastic grafana prometheus jenkins github
    install configure upgrade downgrade enable disable start stop restart
    monitor measure profile optimize tune debug fix refactor rename remove
    create update delete read write append flush sync fetch push pull clone
    fast slow large small new old first last default custom local remote
    primary secondary internal external public private static dynamic
    manual automatic stable broken flaky missing duplicate invalid empty
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""English base words, roughly most to least frequent (the Zipf rank order).

The first ENGLISH_FUNCTION_WORDS are function words."""
ENGLISH_FUNCTION_WORDS = 48

JAPANESE_WORDS: tuple[str, ...] = tuple(
    """
    設定 管理 更新 削除 追加 確認 変更 実行 検索 索引 文書 資料 会議 議事録
    手順 方法 原因 対策 障害 復旧 監視 通知 警告 記録 履歴 権限 認証 暗号
    接続 切断 転送 保存 読込 書込 圧縮 展開 同期 非同期 並列 分散 集計
    性能 速度 遅延 容量 負荷 試験 検証 評価 測定 改善 最適化 移行 導入
    開発 運用 保守 計画 予定 目標 課題 要件 仕様 設計 実装 環境 本番
    社内 顧客 契約 請求 支払 部署 担当 責任 承認 申請 報告 相談 共有
    データ サーバー キャッシュ クエリ インデックス ファイル ログ エラー
    ユーザー リクエスト レスポンス クラスタ ノード ネットワーク メモリ
    ディスク スレッド プロセス キュー メッセージ イベント バッチ ジョブ
    タスク スケジュール リトライ タイムアウト トークン テーブル カラム
    スキーマ バックアップ スナップショット レプリカ コミット ロールバック
    バージョン リリース ブランチ マージ レビュー パイプライン コンテナ
    イメージ ボリューム ポリシー ロール ダッシュボード メトリクス アラート
    モデル 学習 推論 特徴量 埋め込み ベクトル 精度 再現率 評価指標
    東京 大阪 週次 月次 年次 新規 既存 旧版 最新 標準 独自 外部 内部
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Japanese base words (kanji nouns and katakana loanwords), most frequent first."""

JAPANESE_PARTICLES: tuple[str, ...] = ("の", "を", "は", "が", "に", "で", "と", "も", "から", "まで")
JAPANESE_ENDINGS: tuple[str, ...] = ("する。", "します。", "です。", "である。", "した。", "について。", "を行う。")

ENGLISH_SUFFIXES: tuple[str, ...] = ("s", "ed", "ing", "er")
"""Inflections a paraphrased English query may put on a word, so stemming matters."""

ZIPF_EXPONENT = 1.1
"""Slightly above 1 (English word frequencies measure close to 1); keeps the compound tail under half the text."""
ZIPF_OFFSET = 2.7
"""Mandelbrot's offset: flattens the head so the top few words do not take half the text."""


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """A ranked word list and cumulative Zipf weights for sampling from it."""

    words: tuple[str, ...]
    cum_weights: tuple[float, ...]

    def sample(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=count)

    def sample_tail(self, rng: random.Random, count: int, skip: int) -> list[str]:
        """Words drawn uniformly past rank `skip`: distinctive topic terms."""
        return [self.words[rng.randrange(skip, len(self.words))] for _ in range(count)]


def build_vocabulary(
    base: tuple[str, ...], compounds: int, rng: random.Random, function_words: int = 0
) -> Vocabulary:
    """Base words first, then `compounds` two-word compounds in a seeded random order.

    The first `function_words` base words never enter a compound ("thatshard" is no word).
    """
    content = list(base[function_words:])
    pairs = [a + b for a, b in itertools.permutations(content, 2)]
    rng.shuffle(pairs)
    words = base + tuple(pairs[:compounds])
    weights = [1.0 / (rank + ZIPF_OFFSET) ** ZIPF_EXPONENT for rank in range(len(words))]
    return Vocabulary(words=words, cum_weights=tuple(itertools.accumulate(weights)))


def zipf_rank_share(vocabulary: Vocabulary, top: int) -> float:
    """Probability mass of the first `top` words (used by the tests)."""
    index = min(top, len(vocabulary.words)) - 1
    return vocabulary.cum_weights[index] / vocabulary.cum_weights[-1]
