"""Column names of a question episode: anonymous (X1..Xd) or decoys.

**Decoy names** are plausible domain words — clinical or market variables, the two fields of
CausalAgent's CausalTQA — attached to the columns at random, so they carry no causal meaning:
"smoking" may well be an effect of "lung_capacity". They measure whether an agent follows the
names or the data. Which domain and which words a question gets is fixed by the question set
(the same for every policy and process); the words reach the agent only, never scoring, which
works on column positions.
"""

from __future__ import annotations

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError

NAME_MODES = ("anonymous", "decoy")

#: domain → words (identifiers, so that edge lists and tools read them as variable names)
DECOY_WORDS: dict[str, tuple[str, ...]] = {
    "clinical": (
        "age", "blood_pressure", "heart_rate", "cholesterol", "body_mass_index",
        "blood_glucose", "insulin_level", "smoking", "alcohol_intake", "exercise_hours",
        "sleep_hours", "stress_score", "systolic_pressure", "diastolic_pressure",
        "triglycerides", "hdl_cholesterol", "ldl_cholesterol", "creatinine", "kidney_function",
        "liver_enzymes", "hemoglobin", "white_cell_count", "platelet_count", "crp_level",
        "vitamin_d", "sodium_intake", "potassium_level", "bone_density", "lung_capacity",
        "oxygen_saturation", "respiratory_rate", "body_temperature", "pain_score",
        "medication_dose", "statin_use", "aspirin_use", "hospital_stay", "readmission_risk",
        "recovery_time", "tumor_size", "viral_load", "antibody_titer", "dietary_fiber",
        "waist_circumference", "cortisol_level", "thyroid_hormone", "depression_score",
        "cognitive_score", "gait_speed", "grip_strength", "uric_acid", "ejection_fraction",
        "arterial_stiffness", "inflammation_marker", "symptom_severity", "treatment_adherence",
        "clinic_visits", "vaccination_status", "air_pollution_exposure", "family_history"),
    "market": (
        "price", "sales_volume", "ad_spend", "brand_awareness", "customer_satisfaction",
        "market_share", "discount_rate", "store_traffic", "online_visits", "conversion_rate",
        "inventory_level", "competitor_price", "shipping_cost", "delivery_time",
        "return_rate", "customer_churn", "loyalty_points", "email_campaigns",
        "social_mentions", "search_volume", "consumer_confidence", "household_income",
        "unemployment_rate", "interest_rate", "fuel_price", "exchange_rate", "seasonality",
        "product_rating", "review_count", "page_views", "cart_abandonment", "average_order",
        "repeat_purchases", "sales_staff", "store_count", "shelf_space", "promotion_depth",
        "coupon_redemption", "lead_time", "supplier_cost", "production_volume",
        "warehouse_capacity", "web_latency", "app_downloads", "subscription_count",
        "customer_tenure", "support_tickets", "net_promoter_score", "market_growth",
        "category_demand", "price_index", "distribution_reach", "tv_impressions",
        "radio_spots", "influencer_posts", "click_through_rate", "bounce_rate",
        "cost_per_click", "gross_margin", "operating_cost"),
}
DOMAINS = tuple(DECOY_WORDS)


def check_name_mode(mode: str) -> str:
    if mode not in NAME_MODES:
        raise UnknownNameError("name mode", mode, NAME_MODES)
    return mode


def decoy_names(d: int, seed: int) -> tuple[str, tuple[str, ...]]:
    """A domain and ``d`` distinct words of it in random order, drawn from ``seed`` alone."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    domain = DOMAINS[int(rng.integers(len(DOMAINS)))]
    words = DECOY_WORDS[domain]
    if d > len(words):
        raise HeuresisError(f"decoy names cover at most {len(words)} columns; this table has "
                            f"{d} (use names='anonymous')")
    chosen = rng.choice(len(words), size=d, replace=False)
    return domain, tuple(words[int(k)] for k in chosen)


def column_names(mode: str, d: int, seed: int) -> tuple[str, ...]:
    """The names of the ``d`` columns in one episode of a question under a name mode."""
    if check_name_mode(mode) == "anonymous":
        return tuple(f"X{i + 1}" for i in range(d))
    return decoy_names(d, seed)[1]
